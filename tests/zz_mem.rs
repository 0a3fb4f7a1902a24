use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
struct A;
static CUR: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for A {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let c = CUR.fetch_add(l.size(), Relaxed) + l.size();
        PEAK.fetch_max(c, Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        CUR.fetch_sub(l.size(), Relaxed);
        System.dealloc(p, l)
    }
}
#[global_allocator]
static G: A = A;
fn mb(x: usize) -> f64 {
    x as f64 / 1e6
}
#[test]
fn mem() {
    let bytes = std::fs::read("tests/out/bench/large-70k.jsonl").unwrap();
    let s = ctxfold::session::Session::load(bytes, Default::default()).unwrap();
    eprintln!(
        "after load cur {:.0} peak {:.0}",
        mb(CUR.load(Relaxed)),
        mb(PEAK.load(Relaxed))
    );
    PEAK.store(CUR.load(Relaxed), Relaxed);
    let ctx = ctxfold::context::build_context(
        &s,
        &ctxfold::context::BuildOptions {
            transcript: true,
            ..Default::default()
        },
    )
    .unwrap();
    eprintln!(
        "after build cur {:.0} peak {:.0}",
        mb(CUR.load(Relaxed)),
        mb(PEAK.load(Relaxed))
    );
    let j = ctx.to_json(&s);
    eprintln!(
        "after json {} cap {} cur {:.0} peak {:.0}",
        j.len(),
        j.capacity(),
        mb(CUR.load(Relaxed)),
        mb(PEAK.load(Relaxed))
    );
}
