//! What a protobuf message will cost once decoded, read from its wire bytes before it is
//! decoded. A message's wire form says little of its decoded size: an empty element of a
//! repeated field is two bytes on the wire and a struct of a hundred in memory, in a vector
//! that starts with room for four, so a 4 MiB gNMI Get of empty paths decodes to 200 MiB.
//! The estimate walks the wire against the message's descriptor (the proto files the
//! servers were generated from) and adds, for each element decoded, what prost gives it:
//! its struct (from the descriptor: strings, bytes and vectors 24 bytes, maps 48, scalars 8,
//! a message field its own struct inline), the bytes of its strings, and the room vectors
//! and maps keep as they grow (four elements at first, then doubling). It is an upper
//! bound for prost's structs on a 64-bit target, within a few percent for the messages that
//! cost the most per byte (measured in the tests below); the guard holds it against the
//! budget before tonic decodes anything.

use std::collections::HashMap;

use bytes::Bytes;
use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};

/// Slack of any struct (padding, an enum's tag).
const STRUCT: usize = 8;
/// A String, Vec or Bytes on the stack.
const VEC: usize = 24;
/// A HashMap on the stack.
const MAP: usize = 48;
/// What a vector of one element holds room for.
const FIRST_ROOM: usize = 4;
/// prost's own limit of nested messages: deeper, it refuses the message.
const MAX_DEPTH: usize = 100;

/// The methods of some services, by gRPC path, with what their requests decode to.
#[derive(Debug)]
pub struct Methods {
    inputs: HashMap<String, MessageDescriptor>,
    /// Each message type's struct size, by full name.
    structs: HashMap<String, usize>,
}

#[derive(Debug, thiserror::Error)]
#[error("the services' descriptors: {0}")]
pub struct DescriptorsError(#[from] prost_reflect::DescriptorError);

impl Methods {
    /// The methods of every service in these encoded file descriptor sets.
    pub fn new(sets: &[&[u8]]) -> Result<Methods, DescriptorsError> {
        let mut pool = DescriptorPool::new();
        for set in sets {
            pool.decode_file_descriptor_set(*set)?;
        }
        let mut inputs = HashMap::new();
        for service in pool.services() {
            for method in service.methods() {
                let path = format!("/{}/{}", service.full_name(), method.name());
                inputs.insert(path, method.input());
            }
        }
        let mut structs = HashMap::new();
        for message in pool.all_messages() {
            struct_size(&message, &mut structs, &mut Vec::new());
        }
        Ok(Methods { inputs, structs })
    }

    /// The request message of the method at `path` ("/gnmi.gNMI/Get"); None for a method
    /// these services do not have.
    pub fn input(&self, path: &str) -> Option<&MessageDescriptor> {
        self.inputs.get(path)
    }

    /// An upper bound of the memory `wire` (one message of type `message`, in chunks)
    /// takes once decoded. A message prost would refuse is estimated as far as it goes.
    pub fn decoded_size(&self, message: &MessageDescriptor, wire: &[Bytes]) -> usize {
        let mut cursor = Cursor::new(wire);
        self.struct_of(message) + self.contents(message, &mut cursor, 0)
    }

    fn struct_of(&self, message: &MessageDescriptor) -> usize {
        self.structs
            .get(message.full_name())
            .copied()
            .unwrap_or(STRUCT + VEC * message.fields().len())
    }

    /// What the fields on the wire add to the message's own struct.
    fn contents(&self, message: &MessageDescriptor, wire: &mut Cursor<'_>, depth: usize) -> usize {
        let mut cost = 0;
        // Repeated fields already begun in this message: their vector has room.
        let mut begun: Vec<u32> = Vec::new();
        while wire.left > 0 {
            let Some(key) = wire.varint() else {
                break;
            };
            let number = (key >> 3) as u32;
            let field = message.get_field(number);
            let Some(added) = self.field(field.as_ref(), key & 7, wire, depth) else {
                break;
            };
            cost += added;
            if let Some(field) = field.filter(|f| f.is_list() || f.is_map()) {
                cost += self.element_room(&field, !begun.contains(&number));
                if !begun.contains(&number) {
                    begun.push(number);
                }
            }
        }
        cost
    }

    /// One field on the wire: what its contents add (not its room in a vector). None when
    /// the wire ends early or is not protobuf.
    fn field(
        &self,
        field: Option<&FieldDescriptor>,
        wire_type: u64,
        wire: &mut Cursor<'_>,
        depth: usize,
    ) -> Option<usize> {
        match wire_type {
            0 => wire.varint().map(|_| 0),
            1 => wire.skip(8).then_some(0),
            5 => wire.skip(4).then_some(0),
            2 => {
                let len = usize::try_from(wire.varint()?).ok()?;
                let mut inner = wire.sub(len)?;
                Some(match field.map(FieldDescriptor::kind) {
                    Some(Kind::Message(sub)) if depth < MAX_DEPTH => {
                        self.contents(&sub, &mut inner, depth + 1)
                    }
                    Some(Kind::String | Kind::Bytes) => len,
                    // Packed scalars: each at least a byte on the wire, 8 in memory, twice
                    // for the vector's growth.
                    Some(_) if field.is_some_and(FieldDescriptor::is_list) => len * 16,
                    _ => 0,
                })
            }
            // Groups: prost refuses them.
            _ => None,
        }
    }

    /// The room one more element of a repeated field or map takes in its container.
    fn element_room(&self, field: &FieldDescriptor, first: bool) -> usize {
        let element = match field.kind() {
            Kind::Message(entry) if field.is_map() => {
                entry.fields().map(|f| self.inline(&f)).sum::<usize>() + STRUCT
            }
            Kind::Message(sub) => self.struct_of(&sub),
            Kind::String | Kind::Bytes => VEC,
            _ => 8,
        };
        if first {
            FIRST_ROOM * element
        } else {
            2 * element
        }
    }

    fn inline(&self, field: &FieldDescriptor) -> usize {
        inline(field, &mut |m: &MessageDescriptor| self.struct_of(m))
    }
}

/// The struct prost generates for `message`, in bytes, with those of the messages it holds
/// inline (a message field is an Option of its struct; one that holds itself is boxed).
fn struct_size(
    message: &MessageDescriptor,
    known: &mut HashMap<String, usize>,
    open: &mut Vec<String>,
) -> usize {
    if let Some(size) = known.get(message.full_name()) {
        return *size;
    }
    if open.iter().any(|name| name == message.full_name()) {
        // Recursive: prost boxes it.
        return 8;
    }
    open.push(message.full_name().to_string());
    let mut size = STRUCT;
    let mut oneofs: HashMap<String, usize> = HashMap::new();
    for field in message.fields() {
        let of_field = inline(&field, &mut |m: &MessageDescriptor| {
            struct_size(m, known, open)
        });
        match field.containing_oneof().filter(|o| !o.is_synthetic()) {
            Some(oneof) => {
                let widest = oneofs.entry(oneof.name().to_string()).or_insert(STRUCT);
                *widest = (*widest).max(of_field + STRUCT);
            }
            None => size += of_field,
        }
    }
    size += oneofs.values().sum::<usize>();
    open.pop();
    known.insert(message.full_name().to_string(), size);
    size
}

/// A field's place in its message's struct.
fn inline(
    field: &FieldDescriptor,
    struct_of: &mut dyn FnMut(&MessageDescriptor) -> usize,
) -> usize {
    if field.is_map() {
        return MAP;
    }
    if field.is_list() {
        return VEC;
    }
    match field.kind() {
        Kind::Message(sub) => struct_of(&sub) + STRUCT,
        Kind::String | Kind::Bytes => VEC,
        _ => 16,
    }
}

/// Reads a message's wire bytes across the chunks they came in.
#[derive(Clone)]
struct Cursor<'a> {
    chunks: &'a [Bytes],
    chunk: usize,
    offset: usize,
    /// Bytes of this (sub)message not read yet.
    left: usize,
}

impl<'a> Cursor<'a> {
    fn new(chunks: &'a [Bytes]) -> Cursor<'a> {
        Cursor {
            chunks,
            chunk: 0,
            offset: 0,
            left: chunks.iter().map(Bytes::len).sum(),
        }
    }

    fn byte(&mut self) -> Option<u8> {
        if self.left == 0 {
            return None;
        }
        while self.offset >= self.chunks.get(self.chunk)?.len() {
            self.chunk += 1;
            self.offset = 0;
        }
        let byte = self.chunks[self.chunk][self.offset];
        self.offset += 1;
        self.left -= 1;
        Some(byte)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// Skips `n` bytes; false when fewer are left.
    fn skip(&mut self, mut n: usize) -> bool {
        if n > self.left {
            self.left = 0;
            return false;
        }
        self.left -= n;
        while n > 0 {
            let Some(chunk) = self.chunks.get(self.chunk) else {
                return false;
            };
            let here = (chunk.len() - self.offset).min(n);
            n -= here;
            self.offset += here;
            if self.offset >= chunk.len() {
                self.chunk += 1;
                self.offset = 0;
            }
        }
        true
    }

    /// The next `len` bytes as a cursor of their own; this one moves past them.
    fn sub(&mut self, len: usize) -> Option<Cursor<'a>> {
        if len > self.left {
            return None;
        }
        let mut sub = self.clone();
        sub.left = len;
        self.skip(len);
        Some(sub)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use gnmi_proto::gnmi;
    use prost::Message;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    /// Counts what this thread allocates, to hold the estimate against what prost really
    /// takes (other tests run on other threads meanwhile).
    struct Counting;

    thread_local! {
        static NOW: Cell<usize> = const { Cell::new(0) };
        static PEAK: Cell<usize> = const { Cell::new(0) };
    }

    // SAFETY: forwards to the system allocator, counting sizes on the way.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = NOW.try_with(|now| {
                now.set(now.get() + layout.size());
                let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now.get())));
            });
            // SAFETY: the caller's layout, as GlobalAlloc requires.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            let _ = NOW.try_with(|now| now.set(now.get().saturating_sub(layout.size())));
            // SAFETY: allocated by System with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static ALLOCATOR: Counting = Counting;

    fn decoded_bytes<M: Message + Default>(wire: &[u8]) -> usize {
        let before = NOW.with(Cell::get);
        PEAK.with(|peak| peak.set(before));
        let message = M::decode(wire).unwrap();
        let peak = PEAK.with(Cell::get) - before;
        drop(message);
        peak + std::mem::size_of::<M>()
    }

    fn methods() -> Methods {
        Methods::new(&[gnmi_proto::FILE_DESCRIPTOR_SET]).unwrap()
    }

    fn repeated(unit: &[u8], count: usize) -> Vec<u8> {
        std::iter::repeat_n(unit, count)
            .flatten()
            .copied()
            .collect()
    }

    /// Cut anywhere: the estimate reads across chunks.
    fn chunks(wire: &[u8]) -> Vec<Bytes> {
        wire.chunks(1000).map(Bytes::copy_from_slice).collect()
    }

    #[test]
    fn the_estimate_bounds_what_prost_takes_for_the_costliest_messages() {
        let methods = methods();
        let get = methods.input("/gnmi.gNMI/Get").unwrap().clone();
        let set = methods.input("/gnmi.gNMI/Set").unwrap().clone();
        let subscribe = methods.input("/gnmi.gNMI/Subscribe").unwrap().clone();
        let nested = |inner: Vec<u8>| {
            let mut wire = vec![0x0a];
            prost::encoding::encode_varint(inner.len() as u64, &mut wire);
            wire.extend(inner);
            wire
        };
        let realistic = gnmi::GetRequest {
            path: (0..200)
                .map(|i| gnmi::Path {
                    elem: vec![
                        gnmi::PathElem {
                            name: "ports".into(),
                            key: Default::default(),
                        },
                        gnmi::PathElem {
                            name: "port".into(),
                            key: [("name".to_string(), format!("p{i}"))].into(),
                        },
                    ],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .encode_to_vec();
        type Decode = fn(&[u8]) -> usize;
        let cases: [(&str, &MessageDescriptor, Vec<u8>, Decode); 6] = [
            (
                "empty paths",
                &get,
                repeated(&[0x12, 0x00], 100_000),
                decoded_bytes::<gnmi::GetRequest>,
            ),
            (
                "paths of an empty element",
                &get,
                repeated(&[0x12, 0x02, 0x1a, 0x00], 100_000),
                decoded_bytes::<gnmi::GetRequest>,
            ),
            (
                "models",
                &get,
                repeated(&[0x32, 0x00], 100_000),
                decoded_bytes::<gnmi::GetRequest>,
            ),
            (
                "empty updates",
                &set,
                repeated(&[0x1a, 0x00], 100_000),
                decoded_bytes::<gnmi::SetRequest>,
            ),
            (
                "empty subscriptions",
                &subscribe,
                nested(repeated(&[0x12, 0x00], 100_000)),
                decoded_bytes::<gnmi::SubscribeRequest>,
            ),
            (
                "real paths",
                &get,
                realistic,
                decoded_bytes::<gnmi::GetRequest>,
            ),
        ];
        for (name, descriptor, wire, decode) in cases {
            let real = decode(&wire);
            let estimate = methods.decoded_size(descriptor, &chunks(&wire));
            assert!(
                estimate >= real && estimate <= real * 3,
                "{name}: {} wire bytes decode to {real}, estimated {estimate}",
                wire.len()
            );
        }
    }

    #[test]
    fn a_long_string_costs_its_bytes_and_unknown_methods_are_not_found() {
        let methods = methods();
        let set = methods.input("/gnmi.gNMI/Set").unwrap().clone();
        let value = gnmi::SetRequest {
            replace: vec![gnmi::Update {
                val: Some(gnmi::TypedValue {
                    value: Some(gnmi::typed_value::Value::JsonIetfVal(vec![b' '; 1 << 20])),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }
        .encode_to_vec();
        let estimate = methods.decoded_size(&set, &chunks(&value));
        assert!(
            (1 << 20..(1 << 20) + 4096).contains(&estimate),
            "{estimate}"
        );
        assert!(methods.input("/gnmi.gNMI/Nothing").is_none());
        // Not protobuf: estimated as far as it reads, without a panic.
        let garbage = methods.decoded_size(&set, &[Bytes::from_static(&[0xff; 64])]);
        assert!(garbage < 4096);
    }
}
