//! SQLite's memory from the program's own allocator, in sc-hook's one-shot run: from the arena's
//! region (`arena`), which the kernel maps in one huge page, rather than from the C library's
//! heap, whose pages are mapped one fault at a time.
//!
//! A hook call opens the state store: SQLite takes about 160 KB (a 120 KB lookaside buffer, its
//! page cache, parsed statements), and the C library's heap faulted in about 40 pages for it, some
//! 2 µs each on the project's machine (perf, 2026-12-05).
//!
//! Each block carries its size in the 8 bytes before it, for SQLite's `xSize` and for giving the
//! block back with the layout it was made with. Configured only before SQLite is first used:
//! later, SQLite refuses (`SQLITE_MISUSE`) and keeps the C library's allocator, which works as
//! before.

use std::alloc::Layout;
use std::ffi::{c_int, c_void};

use rusqlite::ffi;

/// Bytes before each block: its size, and the 8-byte alignment SQLite asks for.
const HEADER: usize = 8;

/// The layout of a block that holds `size` bytes for SQLite.
fn layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(HEADER)?, HEADER).ok()
}

unsafe extern "C" fn malloc(size: c_int) -> *mut c_void {
    let Some(layout) = usize::try_from(size).ok().and_then(layout) else {
        return std::ptr::null_mut();
    };
    // SAFETY: a non-zero layout (the header at least).
    let block = unsafe { std::alloc::alloc(layout) };
    if block.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the block holds the header, aligned to 8.
    unsafe {
        (block as *mut usize).write(layout.size() - HEADER);
        block.add(HEADER).cast()
    }
}

/// The block (header included) behind what SQLite holds, and its layout.
///
/// SAFETY: `held` came from [`malloc`] or [`realloc`] and was not freed.
unsafe fn block_of(held: *mut c_void) -> (*mut u8, Layout) {
    // SAFETY: the header is just before, written when the block was made.
    unsafe {
        let block = (held as *mut u8).sub(HEADER);
        let size = (block as *const usize).read();
        (
            block,
            Layout::from_size_align_unchecked(size + HEADER, HEADER),
        )
    }
}

unsafe extern "C" fn free(held: *mut c_void) {
    if held.is_null() {
        return;
    }
    // SAFETY: SQLite frees only what it was given, once.
    unsafe {
        let (block, layout) = block_of(held);
        std::alloc::dealloc(block, layout);
    }
}

unsafe extern "C" fn realloc(held: *mut c_void, size: c_int) -> *mut c_void {
    if held.is_null() {
        // SAFETY: as malloc.
        return unsafe { malloc(size) };
    }
    let Some(new) = usize::try_from(size).ok().and_then(layout) else {
        return std::ptr::null_mut();
    };
    // SAFETY: SQLite resizes only what it was given; the new size keeps the alignment.
    unsafe {
        let (block, old) = block_of(held);
        let moved = std::alloc::realloc(block, old, new.size());
        if moved.is_null() {
            return std::ptr::null_mut();
        }
        (moved as *mut usize).write(new.size() - HEADER);
        moved.add(HEADER).cast()
    }
}

unsafe extern "C" fn size(held: *mut c_void) -> c_int {
    if held.is_null() {
        return 0;
    }
    // SAFETY: a block SQLite holds; its size was an int when SQLite asked for it.
    unsafe { (block_of(held).1.size() - HEADER) as c_int }
}

extern "C" fn roundup(size: c_int) -> c_int {
    size.saturating_add(7) & !7
}

extern "C" fn init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

extern "C" fn shutdown(_: *mut c_void) {}

/// Hands SQLite's allocations to this program's allocator; whether SQLite took them (it does
/// only before it is first used).
pub fn use_the_arena() -> bool {
    let methods = ffi::sqlite3_mem_methods {
        xMalloc: Some(malloc),
        xFree: Some(free),
        xRealloc: Some(realloc),
        xSize: Some(size),
        xRoundup: Some(roundup),
        xInit: Some(init),
        xShutdown: Some(shutdown),
        pAppData: std::ptr::null_mut(),
    };
    // SAFETY: SQLite copies the methods, functions that live as long as the program; it refuses
    // (SQLITE_MISUSE) once initialised, and changes nothing then.
    unsafe {
        ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods as *const _) == ffi::SQLITE_OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The methods as SQLite calls them: sizes kept, bytes kept across a resize, every block
    /// aligned to 8, and a null or negative request answered as SQLite expects.
    #[test]
    fn blocks_keep_their_size_and_bytes() {
        unsafe {
            let held = malloc(100);
            assert!(!held.is_null());
            assert_eq!(held as usize % 8, 0);
            assert_eq!(size(held), 100);
            (held as *mut u8).write_bytes(0x5A, 100);
            let grown = realloc(held, 5000);
            assert_eq!(size(grown), 5000);
            assert_eq!(grown as usize % 8, 0);
            let bytes = std::slice::from_raw_parts(grown as *const u8, 100);
            assert!(bytes.iter().all(|b| *b == 0x5A));
            let shrunk = realloc(grown, 10);
            assert_eq!(size(shrunk), 10);
            assert_eq!(*(shrunk as *const u8), 0x5A);
            free(shrunk);
            free(std::ptr::null_mut());
            assert!(malloc(-1).is_null());
            let fresh = realloc(std::ptr::null_mut(), 24);
            assert_eq!(size(fresh), 24);
            free(fresh);
            assert_eq!(size(std::ptr::null_mut()), 0);
        }
        assert_eq!(roundup(1), 8);
        assert_eq!(roundup(16), 16);
        assert_eq!(roundup(c_int::MAX), c_int::MAX & !7);
    }
}
