//! Operational commands that call an operation of the model (`rpc` in the grammar): the
//! parameters typed as word and value, checked as their leaves' types say, confirmed first
//! when the grammar asks, the answer drawn as fields.

use efb_yang::schema::SchemaId;
use serde_json::Value as Json;

use super::{Output, Result, Shell, ShellError, confirmed, fail};
use crate::grammar::{Command, Drawing, Render};
use crate::{protocol, view};

impl Shell {
    pub(super) fn run_rpc(&mut self, command: &Command, rest: &[String]) -> Result<Output> {
        let Some(rpc) = &command.rpc else {
            return fail("internal: not an rpc command");
        };
        let mut input = serde_json::Map::new();
        let mut words = rest.iter();
        while let Some(word) = words.next() {
            let Some(param) = command.params.iter().find(|p| &p.word == word) else {
                let names: Vec<&str> = command.params.iter().map(|p| p.word.as_str()).collect();
                return fail(format!(
                    "{}: unknown parameter \"{word}\"; parameters are: {}",
                    command.words,
                    names.join(", ")
                ));
            };
            let Some(value) = words.next() else {
                return fail(format!("{}: {word} needs a value", command.words));
            };
            if input.contains_key(&param.leaf) {
                return fail(format!("{}: {word} is given twice", command.words));
            }
            let value = match self.param_leaf(command, &param.leaf) {
                Some(leaf) => self.param_value(command, word, leaf, value)?,
                None => value.clone(),
            };
            input.insert(param.leaf.clone(), Json::String(value));
        }
        self.missing_params(command, &input)?;
        if !self.scripted
            && let Some(effect) = command.confirm.iter().find_map(|c| c.applies(&input))
            && !confirmed(&effect)?
        {
            return Ok(Output::lines(vec![
                "not confirmed: nothing changed".to_string(),
            ]));
        }
        let output = self.client().call_rpc(rpc, &Json::Object(input))?;
        let lines = match &command.render {
            Some(Render::Drawing(Drawing::Done)) => vec!["ok".to_string()],
            Some(Render::Drawing(Drawing::Json)) => {
                vec![serde_json::to_string_pretty(&output).unwrap_or_default()]
            }
            Some(Render::View(name)) => match self.grammar.views.get(name) {
                Some(v) if !v.fields.is_empty() => view::render_fields(v, &output),
                _ => fields(&output),
            },
            Some(Render::Drawing(Drawing::Fields | Drawing::Value) | Render::Inventory(_))
            | None => fields(&output),
        };
        Ok(Output::facts(lines, output))
    }

    /// The value typed for `param`, checked as its leaf's type says (protocol names become
    /// numbers), the error naming the parameter by the word typed, not by the model's path.
    fn param_value(
        &self,
        command: &Command,
        word: &str,
        leaf: SchemaId,
        value: &str,
    ) -> Result<String> {
        if self.schema.is_protocol_leaf(leaf) {
            return protocol::number(value)
                .map(|n| n.to_string())
                .ok_or_else(|| {
                    ShellError(format!(
                        "{}: {word} \"{}\" is not a protocol; expected {}",
                        command.words,
                        efb_yang::text::excerpt(value),
                        protocol::ACCEPTED
                    ))
                });
        }
        self.schema
            .value(leaf, value)
            .map(|v| v.as_str().to_string())
            .map_err(|e| {
                ShellError(format!(
                    "{}: {word} {e}; expected {}",
                    command.words,
                    self.schema.node(leaf).accepts()
                ))
            })
    }

    /// Parameters of an operation the model requires and the words do not give, by the
    /// words that give them.
    fn missing_params(
        &self,
        command: &Command,
        input: &serde_json::Map<String, Json>,
    ) -> Result<()> {
        let missing: Vec<&str> = command
            .params
            .iter()
            .filter(|p| !input.contains_key(&p.leaf))
            .filter(|p| {
                self.param_leaf(command, &p.leaf)
                    .is_some_and(|l| self.schema.node(l).mandatory)
            })
            .map(|p| p.word.as_str())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        fail(format!(
            "{}: missing {}; it takes {}",
            command.words,
            missing.join(", "),
            self.usage(command)
        ))
    }

    /// The input leaf of an operation a parameter gives.
    fn param_leaf(&self, command: &Command, leaf: &str) -> Option<SchemaId> {
        let rpc = command.rpc.as_deref()?;
        let (_, input, _) = efb_yang::rpc::operation(self.schema, rpc).ok()?;
        self.schema.child(input?, leaf)
    }

    /// `src A dst B proto P [src-port X]...`: the parameters, the optional ones in brackets.
    fn usage(&self, command: &Command) -> String {
        command
            .params
            .iter()
            .map(|p| {
                let required = self
                    .param_leaf(command, &p.leaf)
                    .is_some_and(|l| self.schema.node(l).mandatory);
                let word = format!("{} {}", p.word, p.leaf.to_uppercase());
                if required { word } else { format!("[{word}]") }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// An object's members, one per line, aligned.
fn fields(output: &Json) -> Vec<String> {
    let rows: Vec<Vec<String>> = output
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| vec![k.clone(), view::text(v)])
                .collect()
        })
        .unwrap_or_default();
    efb_text_table::align(&rows, &[])
}
