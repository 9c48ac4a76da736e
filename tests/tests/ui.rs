//! Every rejected construct is a compile error with a span and a message
//! that says what to write instead (`tests/ui/*.rs` with their `.stderr`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
