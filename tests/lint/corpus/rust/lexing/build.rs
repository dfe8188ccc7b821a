// None of these reads is real: comments, strings, raw and byte strings,
// char literals, lifetimes and a macro definition. The one real read is at
// the end, and its line and column must come out right.
/* block comment: std::env::var("IN_BLOCK")
   /* nested: env::var("IN_NESTED") */ still a comment: env::var("STILL") */
macro_rules! read {
    ($n:expr) => {
        std::env::var($n)
    };
}
fn pick<'a>(a: &'a str, _b: &'a str) -> &'a str {
    a
}
fn main() {
    let s1 = "env::var(\"IN_STRING\")";
    let s2 = r#"std::env::var("IN_RAW") and a " quote"#;
    let s3 = br##"env::var("IN_BYTE_RAW") "# still"##;
    let s4 = b"env::var(\"IN_BYTES\")";
    let c1 = '"';
    let c2 = '\'';
    let c3 = '{';
    let x = pick(s1, s2);
    println!("{} {} {:?} {:?} {} {} {}", x, s2, s3, s4, c1, c2, c3);
    let _unused = || read!("IN_MACRO_DEF");
    let real = std::env::var("REAL_ONE"); // env::var("IN_LINE_COMMENT")
    println!("{:?}", real.ok());
}
#[cfg(test)]
mod tests {
    #[test]
    fn reads_in_tests_never_run_in_a_build() {
        let _ = std::env::var("IN_TEST");
    }
}
