//! PTX text -> tokens, and the numbers as written (`12`, `0x1f`,
//! `0f3F800000`, `1.5`) -> literals.

use super::super::error::EmuError;

/// A token and the line it starts on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub t: Tok,
    pub line: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// Identifiers, opcodes, directives, registers, labels:
    /// `ld.global.nc.L1::no_allocate.v4.u32`, `%tid.x`, `$L_end1`, `.reg`.
    Word(String),
    /// Numbers as written: `12`, `0x1f`, `0f3F800000`, `1.5`.
    Num(String),
    Str(String),
    P(char),
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '_' | '$' | '%' | '.')
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')
}

pub(crate) fn lex(src: &str) -> Result<Vec<Token>, EmuError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            let start = line;
            i += 2;
            loop {
                if i + 1 >= chars.len() {
                    return Err(EmuError::at_line(start, "/*", "unterminated block comment"));
                }
                if chars[i] == '\n' {
                    line += 1;
                }
                if chars[i] == '*' && chars[i + 1] == '/' {
                    i += 2;
                    break;
                }
                i += 1;
            }
        } else if c == '"' {
            let start = i + 1;
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if i < chars.len() && chars[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
            let s: String = chars[start..i.min(chars.len())].iter().collect();
            i += 1;
            out.push(Token { t: Tok::Str(s), line });
        } else if is_word_start(c) {
            let start = i;
            while i < chars.len() {
                if is_word_char(chars[i]) {
                    i += 1;
                } else if chars[i] == ':' && chars.get(i + 1) == Some(&':') {
                    i += 2;
                } else {
                    break;
                }
            }
            out.push(Token {
                t: Tok::Word(chars[start..i].iter().collect()),
                line,
            });
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            // A decimal exponent with a sign: `1.5e-3`.
            let text: String = chars[start..i].iter().collect();
            let lower = text.to_ascii_lowercase();
            let decimal = !(lower.starts_with("0x")
                || lower.starts_with("0f")
                || lower.starts_with("0d")
                || lower.starts_with("0b"));
            if decimal
                && lower.ends_with('e')
                && matches!(chars.get(i), Some('+' | '-'))
                && chars.get(i + 1).is_some_and(char::is_ascii_digit)
            {
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            out.push(Token {
                t: Tok::Num(chars[start..i].iter().collect()),
                line,
            });
        } else if "{}()[]<>,;:@!|+-=".contains(c) {
            out.push(Token { t: Tok::P(c), line });
            i += 1;
        } else {
            return Err(EmuError::at_line(
                line,
                &c.to_string(),
                format!("unexpected character `{c}`"),
            ));
        }
    }
    Ok(out)
}

/// A literal operand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Lit {
    Int(i128),
    /// `0fXXXXXXXX`.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX`.
    F64(u64),
    /// A decimal float (`1.5`), taken as f64.
    Dec(f64),
}

pub(crate) fn parse_num(s: &str) -> Option<Lit> {
    let l = s.to_ascii_lowercase();
    let l = l.strip_suffix('u').unwrap_or(&l);
    if let Some(h) = l.strip_prefix("0f") {
        return u32::from_str_radix(h, 16).ok().filter(|_| h.len() == 8).map(Lit::F32);
    }
    if let Some(h) = l.strip_prefix("0d") {
        return u64::from_str_radix(h, 16).ok().filter(|_| h.len() == 16).map(Lit::F64);
    }
    if let Some(h) = l.strip_prefix("0x") {
        return u128::from_str_radix(h, 16).ok().map(|v| Lit::Int(v as i128));
    }
    if let Some(b) = l.strip_prefix("0b") {
        return u128::from_str_radix(b, 2).ok().map(|v| Lit::Int(v as i128));
    }
    if l.contains('.') || l.contains('e') {
        return l.parse::<f64>().ok().map(Lit::Dec);
    }
    if l.len() > 1 && l.starts_with('0') {
        return u128::from_str_radix(&l[1..], 8).ok().map(|v| Lit::Int(v as i128));
    }
    l.parse::<u128>().ok().map(|v| Lit::Int(v as i128))
}
