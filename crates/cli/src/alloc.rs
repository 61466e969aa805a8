//! The process's allocator: mimalloc 2, entered through its plain (unaligned) functions
//! whenever the requested alignment allows.
//!
//! The `mimalloc` crate's allocator passes every request to `mi_malloc_aligned`, even for
//! alignment 1. mimalloc takes the plain fast path there only for blocks of up to 1 KiB; a
//! larger one (every full-size datagram: 1472 bytes) goes through the generic aligned path,
//! which does not recognise the size as aligned and over-allocates (callgrind, 1 Gbit/s quinn
//! bench run: ~235 instructions per datagram buffer, 1.2% of the run). Every mimalloc block is
//! at least word aligned, so requests of up to that alignment need no aligned call at all;
//! stricter ones keep it.
//!
//! mimalloc 2 rather than 3 (libmimalloc-sys's default; feature `v2`): with the same code the
//! quinn bench rows ran 2.3–3.6% faster in wall time (alternating runs, load ~3) for about the
//! same instructions.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// Alignment of every block mimalloc returns (its smallest size class is one word).
const WORD: usize = std::mem::size_of::<usize>();

/// mimalloc with the plain entry points for word-aligned requests (see the module docs).
pub struct Mimalloc;

// SAFETY: mimalloc's functions meet `GlobalAlloc`'s contract: plain allocations are word
// aligned, so they are used only for `align <= WORD`; stricter alignments go to the aligned
// functions; `mi_free` releases blocks from either kind.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_malloc(layout.size()).cast()
        } else {
            mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_zalloc(layout.size()).cast()
        } else {
            mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi::mi_free(ptr.cast::<c_void>());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
        } else {
            mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every alignment up to a page, at sizes around mimalloc's small/medium boundaries: the
    /// pointer is aligned, writable, and survives a realloc with its contents.
    #[test]
    fn blocks_are_aligned_and_realloc_keeps_contents() {
        let a = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 7, 8, 24, 1000, 1024, 1472, 1500, 70_000] {
                let layout = Layout::from_size_align(size, align).expect("layout");
                // SAFETY: non-zero sizes; every block is freed with the layout it has.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    std::ptr::write_bytes(p, 0xa5, size);
                    let q = a.realloc(p, layout, size * 2);
                    assert_eq!(q as usize % align, 0, "realloc: size {size} align {align}");
                    assert!(std::slice::from_raw_parts(q, size)
                        .iter()
                        .all(|&b| b == 0xa5));
                    a.dealloc(q, Layout::from_size_align(size * 2, align).expect("layout"));
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
