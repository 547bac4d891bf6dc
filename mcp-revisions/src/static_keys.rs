//! A fast hash for the crate's own lookup tables.
//!
//! Their keys are the crate's own (method names, addresses of its statics), fixed when
//! the table is built; what a peer sends is only ever looked up in them, never inserted,
//! so there is nothing to flood, and SipHash would cost more than the lookups it serves,
//! which run several times for every relayed message.

use std::hash::{BuildHasherDefault, Hasher};

/// [`StaticKeyHasher`] for `HashMap`.
pub(crate) type BuildStaticKeyHasher = BuildHasherDefault<StaticKeyHasher>;

/// A multiply-rotate hash, a word at a time.
#[derive(Default)]
pub(crate) struct StaticKeyHasher(u64);

impl Hasher for StaticKeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            self.write_u64(u64::from_le_bytes(word));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            // Byte by byte: a copy of a length only known at run time is a call to memcpy,
            // which cost more than the rest of the hash.
            let word = rest
                .iter()
                .rev()
                .fold(0u64, |w, &b| (w << 8) | u64::from(b));
            self.write_u64(word);
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
