//! What efbd asks of glibc's allocator so that memory a client made it use goes back to the
//! system: large buffers mapped on their own, and the heap trimmed once the owner is idle
//! after a change.

use std::time::Duration;

/// How long the owner is idle after a request before it gives free memory back: the trees
/// of a large commit are freed by then (libyang frees its own on a reaper thread), and a
/// burst of requests pays nothing.
pub const IDLE_BEFORE_GIVING_BACK: Duration = Duration::from_secs(1);

/// Free heap worth a trim: below it, what a trim gives back is not worth its walk of the
/// heap.
const WORTH_GIVING_BACK: usize = 16 << 20;

/// Requests' bodies and replies of a few hundred KiB to many MiB come and go with clients.
/// glibc raises its mmap threshold to the largest block freed (up to 32 MiB), after which
/// such buffers come from the heap and their pages stay with efbd once freed. A fixed
/// threshold keeps them mapped on their own, unmapped when freed: after the attacks of
/// tests/hostile_memory.rs, 89 MiB resident where it was 127 MiB.
pub fn return_large_buffers() {
    const THRESHOLD: libc::c_int = 128 * 1024;
    // SAFETY: mallopt only sets a parameter of the allocator; called before any thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD);
    }
}

/// Gives the heap's free pages back to the system when there are enough of them: glibc
/// keeps what a large commit freed (the trees and the typed configuration of 100 000 flows)
/// for later allocations, resident, until told. Returns the free bytes found.
pub fn give_back_free() -> usize {
    // SAFETY: mallinfo2 reads the allocator's statistics and malloc_trim returns its free
    // pages; both are thread-safe and take no pointers.
    unsafe {
        let free = libc::mallinfo2().fordblks;
        if free >= WORTH_GIVING_BACK {
            libc::malloc_trim(0);
        }
        free
    }
}
