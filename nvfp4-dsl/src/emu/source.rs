//! The Rust statements behind each instruction, from the comments the
//! compiler writes before each statement's PTX: `// 12: let x = a[i];` in
//! the kernel, `// name:3: s[i] = x;` in an inlined device function (lines
//! relative to the function's `fn`, so the PTX holds no path and does not
//! change when code above the kernel moves). Errors carry the statements;
//! the launcher ([`crate::SourceFn`]) turns them into `file:line`.

use crate::target::SourceFn;
use std::fmt;

/// A Rust statement: in the kernel (`function` empty) or in an inlined
/// device function, at `line` relative to its `fn` until resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    function: String,
    line: u32,
    text: String,
    /// The file, once [`resolve`](Place::resolve) found the function;
    /// `line` is then the file's line.
    file: Option<String>,
}

impl Place {
    /// The device function's name, or `None` for the kernel's statement.
    pub fn function(&self) -> Option<&str> {
        (!self.function.is_empty()).then_some(self.function.as_str())
    }

    /// The statement's text as the PTX comment gives it.
    pub fn statement(&self) -> &str {
        &self.text
    }

    /// The file (relative to its crate) and line, once resolved.
    pub fn file_line(&self) -> Option<(&str, u32)> {
        self.file.as_deref().map(|f| (f, self.line))
    }

    pub(crate) fn resolve(&mut self, sources: &[SourceFn]) {
        if self.file.is_some() {
            return;
        }
        if let Some(s) = sources.iter().find(|s| s.name == self.function && !s.file.is_empty()) {
            self.file = Some(s.file.to_string());
            self.line += s.fn_line;
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.function.is_empty() {
            write!(f, "inlined `{}` at ", self.function)?;
        }
        // Unresolved (no launcher named the files): the line from the `fn`.
        match (&self.file, self.function.is_empty()) {
            (Some(file), _) => write!(f, "{file}:{}: `{}`", self.line, self.text),
            (None, true) => write!(f, "kernel+{}: `{}`", self.line, self.text),
            (None, false) => write!(f, "`{}`+{}: `{}`", self.function, self.line, self.text),
        }
    }
}

/// A statement comment's function (empty for the kernel's), relative line
/// and text; `None` for any other comment.
fn statement(comment: &str) -> Option<(&str, u32, &str)> {
    let rest = comment.trim().strip_prefix("//")?.trim_start();
    let (head, text) = rest.split_once(": ")?;
    let (function, line) = match head.rsplit_once(':') {
        Some((f, l)) => (f, l),
        None => ("", head),
    };
    let name_ok = function.chars().all(|c| c.is_alphanumeric() || c == '_' || c == ':');
    let line = line.parse().ok().filter(|_| name_ok)?;
    Some((function, line, text))
}

/// Per instruction, the index of its statements (kernel first, then the
/// device functions inlined at that point, outermost first).
#[derive(Debug, Default)]
pub(crate) struct SourceMap {
    at: Vec<u32>,
    stacks: Vec<Vec<Place>>,
}

impl SourceMap {
    /// The statements before each instruction at `inst_lines` (ascending
    /// PTX lines, 1-based), reading the comments of `lines` from `from`.
    pub(crate) fn build(lines: &[&str], from: u32, inst_lines: &[u32]) -> SourceMap {
        let mut map = SourceMap::default();
        let mut stack: Vec<Place> = Vec::new();
        let mut next = from as usize;
        for &l in inst_lines {
            let mut changed = map.stacks.is_empty();
            while next < l as usize {
                if let Some((function, line, text)) = lines.get(next - 1).and_then(|c| statement(c)) {
                    let place = Place {
                        function: function.to_string(),
                        line,
                        text: text.to_string(),
                        file: None,
                    };
                    // A function's next statement ends the calls it made.
                    let keep = if function.is_empty() {
                        0
                    } else {
                        stack.iter().position(|p| p.function == function).unwrap_or(stack.len())
                    };
                    stack.truncate(keep);
                    stack.push(place);
                    changed = true;
                }
                next += 1;
            }
            if changed {
                map.stacks.push(stack.clone());
            }
            map.at.push(map.stacks.len() as u32 - 1);
        }
        map
    }

    /// The statements of instruction `pc`.
    pub(crate) fn of(&self, pc: usize) -> &[Place] {
        self.at.get(pc).map_or(&[], |&i| &self.stacks[i as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_name_the_kernel_statement_and_the_inlined_ones() {
        let ptx = [
            ".entry k()",
            "{",
            "\t// 3: let a = f(1);",
            "\tmov.u32 %r1, 1;",
            "\t// f:1: let b = g(x);",
            "\t// g:2: y + 1",
            "\tadd.u32 %r2, %r1, 1;",
            "\t// f:2: b * 2",
            "\tmul.lo.u32 %r3, %r2, 2;",
            "\t// Span::end:1: self.start + self.len",
            "\t// 4: out[0] = a;",
            "\tst.global.u32 [%rd1], %r3;",
            "}",
        ];
        let map = SourceMap::build(&ptx, 1, &[4, 7, 9, 12]);
        let show = |pc: usize| map.of(pc).iter().map(|p| p.to_string()).collect::<Vec<_>>();
        assert_eq!(show(0), ["kernel+3: `let a = f(1);`"]);
        assert_eq!(
            show(1),
            [
                "kernel+3: `let a = f(1);`",
                "inlined `f` at `f`+1: `let b = g(x);`",
                "inlined `g` at `g`+2: `y + 1`"
            ]
        );
        assert_eq!(show(2)[1..], ["inlined `f` at `f`+2: `b * 2`"]);
        assert_eq!(show(3), ["kernel+4: `out[0] = a;`"]);
        let mut p = map.of(2)[1].clone();
        p.resolve(&[SourceFn {
            name: "f",
            file: "src/k.rs",
            fn_line: 40,
        }]);
        assert_eq!(p.to_string(), "inlined `f` at src/k.rs:42: `b * 2`");
        assert_eq!(statement("// Span::end:1: x"), Some(("Span::end", 1, "x")));
        assert_eq!(statement("// Generated by nvfp4-dsl 0.1.0: kernel"), None);
    }
}
