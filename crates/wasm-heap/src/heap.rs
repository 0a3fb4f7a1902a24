//! The allocator itself (wasm32 only): see the crate's documentation.

use super::step;
use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::cell::UnsafeCell;
use core::ptr;

/// Linear memory's page.
const PAGE: usize = 64 * 1024;

/// Whole pages for `bytes`.
fn pages(bytes: usize) -> usize {
    bytes.div_ceil(PAGE)
}

/// dlmalloc's source of memory: first the linker's heap area of the initial memory (as the
/// standard library's allocator does), then `memory.grow` in steps of [`step`].
struct Grower;

extern "C" {
    static __heap_base: u8;
    static __heap_end: u8;
}

/// The initial memory's heap area, once (it is dlmalloc's from then on).
fn initial_heap(size: usize) -> Option<(usize, usize)> {
    static mut GIVEN: bool = false;
    // SAFETY: single-threaded (see `Heap`); the symbols are addresses the linker defines.
    unsafe {
        if GIVEN {
            return None;
        }
        let base = ptr::addr_of!(__heap_base) as usize;
        let end = ptr::addr_of!(__heap_end) as usize;
        if base == 0 || end <= base || end - base < size {
            return None;
        }
        GIVEN = true;
        Some((base, end - base))
    }
}

// SAFETY: the regions returned are fresh pages of linear memory, owned by dlmalloc from then
// on; nothing else grows the memory (wasm-bindgen's glue does not), and none is ever returned.
unsafe impl dlmalloc::Allocator for Grower {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        if let Some((base, len)) = initial_heap(size) {
            return (base as *mut u8, len, 0);
        }
        let current = wasm32::memory_size(0) * PAGE;
        let wanted = pages(step(size, current));
        let exact = pages(size);
        let grown = [wanted, exact].into_iter().find_map(|n| {
            let previous = wasm32::memory_grow(0, n);
            (previous != usize::MAX).then_some((previous, n))
        });
        match grown {
            Some((previous, n)) => {
                let base = previous * PAGE;
                let len = n * PAGE;
                // The very top of a 4 GiB memory: a pointer may not wrap to 0 (as the standard
                // library's allocator does, keep its last bytes out of the region).
                let len = if base.wrapping_add(len) == 0 {
                    len - 16
                } else {
                    len
                };
                (base as *mut u8, len, 0)
            }
            None => (ptr::null_mut(), 0, 0),
        }
    }

    fn remap(&self, _ptr: *mut u8, _old: usize, _new: usize, _can_move: bool) -> *mut u8 {
        ptr::null_mut()
    }

    fn free_part(&self, _ptr: *mut u8, _old: usize, _new: usize) -> bool {
        false
    }

    fn free(&self, _ptr: *mut u8, _size: usize) -> bool {
        false
    }

    fn can_release_part(&self, _flags: u32) -> bool {
        false
    }

    fn allocates_zeros(&self) -> bool {
        true
    }

    fn page_size(&self) -> usize {
        PAGE
    }
}

/// The global allocator: one dlmalloc over [`Grower`].
struct Heap(UnsafeCell<dlmalloc::Dlmalloc<Grower>>);

// SAFETY: the module is built without the `atomics` target feature (checked below), so it runs
// on one thread and no two calls into the heap can overlap.
unsafe impl Sync for Heap {}

#[cfg(target_feature = "atomics")]
compile_error!("src/wasm/alloc.rs assumes a single-threaded module (no `atomics`): add a lock");

#[global_allocator]
static HEAP: Heap = Heap(UnsafeCell::new(dlmalloc::Dlmalloc::new_with_allocator(
    Grower,
)));

// SAFETY: each method forwards to dlmalloc under the single-thread guarantee above, with the
// layout the caller gave (dlmalloc's own contract is GlobalAlloc's).
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        (*self.0.get()).malloc(layout.size(), layout.align())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        (*self.0.get()).calloc(layout.size(), layout.align())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        (*self.0.get()).free(ptr, layout.size(), layout.align())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        (*self.0.get()).realloc(ptr, layout.size(), layout.align(), new_size)
    }
}
