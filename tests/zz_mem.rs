#[test]
fn timing() {
    let bytes = std::fs::read("tests/out/bench/large-70k.jsonl").unwrap();
    let s = ctxfold::session::Session::load(bytes, Default::default()).unwrap();
    for _ in 0..2 {
        let t = std::time::Instant::now();
        let ctx = ctxfold::context::build_context(&s, &ctxfold::context::BuildOptions { transcript: true, ..Default::default() }).unwrap();
        let t1 = t.elapsed();
        let mut n = 0;
        ctx.write_json(&s, &mut |p| n += p.len());
        eprintln!("build {:?} json {:?} {n}", t1, t.elapsed() - t1);
    }
}
