//! Module-scope `.const` variables with their initializers.

use super::{EmuError, Lit, P, R, Tok, parse_num, type_bytes};

/// A module-scope `.const` variable: `.const .align 4 .u32 t[4] = {1, 2,
/// 3, 4};` (elements past the initializer are zero; each variable is
/// placed far from the others, so any alignment holds).
#[derive(Clone, Debug)]
pub(crate) struct ConstDecl {
    pub name: String,
    /// The element type, without its dot (`u32`, `f32`).
    pub ty: String,
    /// Elements (1 for a scalar).
    pub count: u64,
    pub values: Vec<Lit>,
    pub line: u32,
}

/// `.const {.align N} .type name{[N]} {= value | = {v, v, ...}};`
pub(super) fn const_decl(p: &mut P<'_>) -> R<ConstDecl> {
    let line = p.line();
    p.word()?; // .const
    let ty = loop {
        if p.eat_word(".align") {
            p.uint()?;
        } else if let Some(Tok::Word(w)) = p.peek()
            && type_bytes(w).is_some()
            && w != ".pred"
        {
            p.i += 1;
            break w[1..].to_string();
        } else {
            return p.err("expected `.align` or a type in a `.const` declaration");
        }
    };
    let name = p.word()?;
    let mut count = 1u64;
    while p.eat_p('[') {
        count = count
            .checked_mul(p.uint()?)
            .ok_or_else(|| EmuError::at_line(line, &name, "this `.const` array is too large"))?;
        p.expect_p(']')?;
    }
    let mut values = Vec::new();
    if p.eat_p('=') {
        let braced = p.eat_p('{');
        loop {
            let negative = p.eat_p('-');
            let value = match p.next() {
                Some(Tok::Num(n)) => parse_num(n),
                _ => None,
            };
            values.push(match (value, negative) {
                (Some(v), false) => v,
                (Some(Lit::Int(v)), true) => Lit::Int(-v),
                (Some(Lit::Dec(v)), true) => Lit::Dec(-v),
                _ => {
                    p.i -= 1;
                    return p.err("expected a number in a `.const` initializer");
                }
            });
            if !braced || !p.eat_p(',') {
                break;
            }
        }
        if braced {
            p.expect_p('}')?;
        }
    }
    p.expect_p(';')?;
    if values.len() as u64 > count {
        return Err(EmuError::at_line(
            line,
            &name,
            format!("`{name}` has {count} elements but {} initial values", values.len()),
        ));
    }
    Ok(ConstDecl {
        name,
        ty,
        count,
        values,
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse_module;
    use super::*;

    #[test]
    fn parses_const_variables_with_initializers() {
        let src = ".const .align 4 .s32 t[4] = {1, -2,\n\t0x10};\n.const .f32 f = 0fBF800000;\n.const .u8 z[2];\n\
                   .visible .entry k() { ret; }";
        let e = parse_module(src).unwrap();
        let c = &e[0].consts;
        assert_eq!((c[0].name.as_str(), c[0].ty.as_str(), c[0].count), ("t", "s32", 4));
        assert_eq!(c[0].values, [Lit::Int(1), Lit::Int(-2), Lit::Int(16)]);
        assert_eq!((c[1].count, &c[1].values[..]), (1, &[Lit::F32(0xBF80_0000)][..]));
        assert!(c[2].values.is_empty());
        let e = parse_module(".const .u32 t[1] = {1, 2};").unwrap_err();
        assert!(e.to_string().contains("`t` has 1 elements but 2 initial values"), "{e}");
    }
}
