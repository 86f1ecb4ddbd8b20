//! What the tests read of a program file: a 64-bit little-endian ELF file's type, its segments'
//! types, its sections and its function symbols. Enough to check how build.rs linked the program
//! (tests/launchers.rs) and where its functions lie (tests/hot_text.rs).

pub const ET_DYN: u16 = 3;
pub const PT_INTERP: u32 = 3;
const SHT_SYMTAB: u32 = 2;
const STT_FUNC: u8 = 2;

pub struct Elf {
    pub kind: u16,
    pub segments: Vec<u32>,
    pub sections: Vec<Section>,
    pub functions: Vec<Symbol>,
}

pub struct Section {
    pub name: String,
    pub addr: u64,
    pub size: u64,
}

pub struct Symbol {
    pub name: String,
    pub addr: u64,
}

impl Section {
    pub fn holds(&self, addr: u64) -> bool {
        (self.addr..self.addr + self.size).contains(&addr)
    }
}

impl Elf {
    pub fn read(bytes: &[u8]) -> Elf {
        assert_eq!(
            &bytes[..6],
            b"\x7fELF\x02\x01",
            "not a 64-bit little-endian ELF file"
        );
        let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap());
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        // A NUL-ended name at `at`.
        let name_at = |at: usize| {
            let end = bytes[at..].iter().position(|&b| b == 0).unwrap();
            String::from_utf8_lossy(&bytes[at..at + end]).into_owned()
        };
        let table = u64_at(0x20) as usize;
        let size = u16_at(0x36) as usize;
        let count = u16_at(0x38) as usize;
        let segments = (0..count).map(|n| u32_at(table + n * size)).collect();

        // Section headers: name, type, address, offset, size, link.
        let table = u64_at(0x28) as usize;
        let size = u16_at(0x3a) as usize;
        let count = u16_at(0x3c) as usize;
        let header = |n: usize| table + n * size;
        let names = u64_at(header(u16_at(0x3e) as usize) + 0x18) as usize;
        let mut sections = Vec::new();
        let mut functions = Vec::new();
        for n in 0..count {
            let at = header(n);
            sections.push(Section {
                name: name_at(names + u32_at(at) as usize),
                addr: u64_at(at + 0x10),
                size: u64_at(at + 0x20),
            });
            if u32_at(at + 4) != SHT_SYMTAB {
                continue;
            }
            let (offset, length) = (u64_at(at + 0x18) as usize, u64_at(at + 0x20) as usize);
            let strings = u64_at(header(u32_at(at + 0x28) as usize) + 0x18) as usize;
            for symbol in (offset..offset + length).step_by(24) {
                if bytes[symbol + 4] & 0xf == STT_FUNC && u64_at(symbol + 16) > 0 {
                    functions.push(Symbol {
                        name: name_at(strings + u32_at(symbol) as usize),
                        addr: u64_at(symbol + 8),
                    });
                }
            }
        }
        Elf {
            kind: u16_at(0x10),
            segments,
            sections,
            functions,
        }
    }

    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|section| section.name == name)
    }
}
