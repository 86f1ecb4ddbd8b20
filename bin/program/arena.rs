//! The allocator of the one program: the system's, except in sc-hook's one-shot run, where
//! nothing is ever given back.
//!
//! A hook is a new process for each tool call that reads one input, loads the policy, decides,
//! answers and exits: about 14,000 small allocations and 1.2 MB in all under the claude-code
//! pack, a quarter of its instructions spent in malloc and free (callgrind, issue 34). After
//! [`never_free`], memory is handed out from one reserved region by moving a pointer, and a
//! free is nothing: the process ends soon after and the kernel takes the region back whole.
//!
//! Bounded: the region is [`REGION`] bytes of address space (pages are touched only as they are
//! used); an allocation that does not fit goes to the system allocator, as everything does
//! before `never_free` and in every other tool, so a larger input still works. Only the region's
//! end moves, and only forward, so memory past it was never handed out and is still the zeroes
//! the kernel mapped.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// The address space reserved for the one-shot run: far above what a hook call uses.
const REGION: usize = 64 << 20;

/// The region's first bytes, mapped at once: one system call instead of a page fault for each
/// of their pages as they are first used. A hook call under the pack uses 0.9 MB of the region
/// (an untainted `Bash` call, 2026-12-02). A kernel without `MADV_POPULATE_WRITE` (before 5.14)
/// faults them in one by one, as before.
const PREFAULT: usize = 1024 << 10;

/// A transparent huge page: the region starts on one, and asks the kernel to back its first
/// [`HUGE`] bytes with one. Each 4 KiB page the kernel maps costs about 2 µs on the project's
/// machine (zeroed, charged to the memory cgroup, added to the LRU lists): taking the 1 MiB above
/// page by page was 0.33 ms, a 2 MiB huge page 0.06 ms (a C loop of 200 mappings,
/// 2026-12-05), and an sc-hook call 0.35-0.39 ms faster (3.62 → 3.28 ms and 3.63 → 3.24 ms,
/// alternating medians of 61). Where the kernel has no huge page to give (transparent huge pages
/// `never`, or memory too fragmented once it tried to compact it, per its `defrag` setting), it
/// maps small pages, as before.
const HUGE: usize = 2 << 20;

/// The allocator: [`System`] until [`never_free`], then the region first.
pub struct Allocator;

static ON: AtomicBool = AtomicBool::new(false);
static START: AtomicUsize = AtomicUsize::new(0);
static NEXT: AtomicUsize = AtomicUsize::new(0);
static END: AtomicUsize = AtomicUsize::new(0);

/// From now on, allocations come from the region and are never freed. For a process that ends
/// after one short piece of work (sc-hook's call); without a region (the kernel refused the
/// mapping) nothing changes.
pub fn never_free() {
    // Once: a second region made by a racing call would leave the first one's blocks looking
    // like the system's, to be freed there.
    static MADE: Once = Once::new();
    MADE.call_once(make_region);
}

fn make_region() {
    // SAFETY: a fresh private anonymous mapping, not shared with anything; checked below. A huge
    // page more than the region, for the region to start on a huge page's boundary.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            REGION + HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return;
    }
    let start = (base as usize).next_multiple_of(HUGE);
    let first = start as *mut libc::c_void;
    // SAFETY: the region's first HUGE bytes, inside the mapping just made (it starts less than
    // HUGE past `base`); a kernel without transparent huge pages refuses, and nothing changes.
    unsafe { libc::madvise(first, HUGE, libc::MADV_HUGEPAGE) };
    // SAFETY: the region's first PREFAULT bytes; failure leaves them as they were.
    unsafe { libc::madvise(first, PREFAULT, libc::MADV_POPULATE_WRITE) };
    START.store(start, Ordering::Relaxed);
    NEXT.store(start, Ordering::Relaxed);
    END.store(start + REGION, Ordering::Relaxed);
    ON.store(true, Ordering::Release);
}

/// Whether `ptr` was handed out from the region.
fn in_region(ptr: *mut u8) -> bool {
    let at = ptr as usize;
    ON.load(Ordering::Acquire)
        && at >= START.load(Ordering::Relaxed)
        && at < END.load(Ordering::Relaxed)
}

/// `size` bytes aligned to `align` from the region, or null when they do not fit.
fn take(size: usize, align: usize) -> *mut u8 {
    let end = END.load(Ordering::Relaxed);
    let mut next = NEXT.load(Ordering::Relaxed);
    loop {
        let Some(start) = next.checked_add(align - 1).map(|at| at & !(align - 1)) else {
            return std::ptr::null_mut();
        };
        let Some(stop) = start.checked_add(size).filter(|stop| *stop <= end) else {
            return std::ptr::null_mut();
        };
        match NEXT.compare_exchange_weak(next, stop, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return start as *mut u8,
            Err(now) => next = now,
        }
    }
}

unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ON.load(Ordering::Acquire) {
            let ptr = take(layout.size(), layout.align());
            if !ptr.is_null() {
                return ptr;
            }
        }
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if ON.load(Ordering::Acquire) {
            // Never handed out before: still the kernel's zeroes.
            let ptr = take(layout.size(), layout.align());
            if !ptr.is_null() {
                return ptr;
            }
        }
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if in_region(ptr) {
            return;
        }
        // SAFETY: not from the region, so from System with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !in_region(ptr) {
            // SAFETY: not from the region, so from System with this layout.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // The last block handed out grows (or shrinks) where it is.
        let at = ptr as usize;
        let old_stop = at + layout.size();
        if let Some(stop) = at.checked_add(new_size) {
            if stop <= END.load(Ordering::Relaxed)
                && stop >= old_stop
                && NEXT
                    .compare_exchange(old_stop, stop, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                return ptr;
            }
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: a valid layout (the caller's alignment, a size it asked for).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as `alloc`.
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks are at least `layout.size()` long and do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(ptr, moved, layout.size()) };
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The region in use, as sc-hook has it (the test process never frees from now on, which
    /// is harmless for a test binary that ends).
    fn region() -> (usize, usize) {
        never_free();
        assert!(ON.load(Ordering::Acquire), "the kernel gave no region");
        (START.load(Ordering::Relaxed), END.load(Ordering::Relaxed))
    }

    /// The region starts on a huge page's boundary, inside its mapping, with all of
    /// [`REGION`] to hand out.
    #[test]
    fn the_region_starts_on_a_huge_page() {
        let (start, end) = region();
        assert_eq!(start % HUGE, 0);
        assert_eq!(end - start, REGION);
        // Its first bytes are mapped and written as any block is.
        let layout = Layout::from_size_align(HUGE / 2, 8).unwrap();
        let block = unsafe { Allocator.alloc(layout) };
        assert!(in_region(block));
        unsafe { block.write_bytes(9, HUGE / 2) };
    }

    #[test]
    fn blocks_are_aligned_apart_and_inside_the_region() {
        let (start, end) = region();
        let mut seen: Vec<(usize, usize)> = Vec::new();
        for (size, align) in [(1, 1), (3, 8), (24, 8), (1, 4096), (100, 16), (7, 64)] {
            let layout = Layout::from_size_align(size, align).unwrap();
            let ptr = unsafe { Allocator.alloc(layout) } as usize;
            assert_eq!(ptr % align, 0);
            assert!(ptr >= start && ptr + size <= end);
            assert!(seen
                .iter()
                .all(|(at, len)| ptr >= at + len || ptr + size <= *at));
            seen.push((ptr, size));
        }
    }

    #[test]
    fn the_last_block_grows_in_place_and_an_earlier_one_moves_with_its_bytes() {
        region();
        let layout = Layout::from_size_align(16, 8).unwrap();
        let first = unsafe { Allocator.alloc(layout) };
        unsafe { first.write_bytes(7, 16) };
        let grown = unsafe { Allocator.realloc(first, layout, 64) };
        // Another thread of the test binary may have allocated in between: in place or moved,
        // the bytes are kept.
        let bytes = unsafe { std::slice::from_raw_parts(grown, 16) };
        assert!(bytes.iter().all(|b| *b == 7));
        let _after = unsafe { Allocator.alloc(layout) };
        let moved =
            unsafe { Allocator.realloc(grown, Layout::from_size_align(64, 8).unwrap(), 4096) };
        assert_ne!(moved, grown);
        let bytes = unsafe { std::slice::from_raw_parts(moved, 16) };
        assert!(bytes.iter().all(|b| *b == 7));
    }

    #[test]
    fn zeroed_blocks_are_zero_after_a_shrink_left_bytes_behind() {
        region();
        let layout = Layout::from_size_align(256, 8).unwrap();
        let dirty = unsafe { Allocator.alloc(layout) };
        unsafe { dirty.write_bytes(0xAB, 256) };
        let _shrunk = unsafe { Allocator.realloc(dirty, layout, 8) };
        let zeroed = unsafe { Allocator.alloc_zeroed(layout) };
        let bytes = unsafe { std::slice::from_raw_parts(zeroed, 256) };
        assert!(bytes.iter().all(|b| *b == 0));
    }

    /// Made once, however many threads ask at the same time: blocks handed out in between are
    /// still the region's when they are freed (a second region once made them the system's).
    #[test]
    fn racing_calls_make_one_region() {
        let threads: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(|| {
                    never_free();
                    let block: Vec<u64> = (0..1000).collect();
                    (START.load(Ordering::Relaxed), block.as_ptr() as usize)
                })
            })
            .collect();
        let seen: Vec<(usize, usize)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let (start, end) = region();
        assert!(seen.iter().all(|(s, _)| *s == start));
        assert!(seen.iter().all(|(_, at)| *at >= start && *at < end));
    }

    #[test]
    fn what_does_not_fit_comes_from_the_system_and_is_freed_there() {
        let (start, end) = region();
        let layout = Layout::from_size_align(REGION + 1, 8).unwrap();
        let big = unsafe { Allocator.alloc(layout) };
        assert!(!big.is_null());
        let at = big as usize;
        assert!(at + REGION < start || at >= end);
        unsafe { big.write_bytes(1, REGION + 1) };
        unsafe { Allocator.dealloc(big, layout) };
        // An ordinary collection still works through all of it.
        let words: Vec<String> = (0..10_000).map(|n| n.to_string()).collect();
        assert_eq!(words[9_999], "9999");
    }
}
