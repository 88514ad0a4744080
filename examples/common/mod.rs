//! What the examples share: one command-line parser (the `lexopt` crate, with the helpers
//! below), one deterministic random number generator and one percentile. Included with
//! `#[path = ...] mod common;` by each example.

#![allow(dead_code)] // each example uses part of it

use std::str::FromStr;

/// A small deterministic generator (xorshift64*): the same seed gives the same maps and orders
/// on every machine and every version of the examples' dependencies.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 if `n` is 0).
    pub fn below(&mut self, n: u32) -> u32 {
        (self.next_u64() % n.max(1) as u64) as u32
    }

    /// A number in `0.0..1.0`.
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// The value of option `name` parsed as `T`, or an error naming the option.
pub fn value<T: FromStr>(parser: &mut lexopt::Parser, name: &str) -> Result<T, String> {
    let raw = parser
        .value()
        .map_err(|e| format!("{name}: {e}"))?
        .into_string()
        .map_err(|v| format!("{name}: not text: {v:?}"))?;
    raw.parse()
        .map_err(|_| format!("{name}: bad value {raw:?}"))
}

/// The error for an argument the example does not take.
pub fn unexpected(arg: lexopt::Arg) -> String {
    arg.unexpected().to_string()
}

/// The `p` percentile of `v` (nearest rank, `p` in 0..=1; 0 for no values).
pub fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(((s.len() as f64 * p).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(0.0)
}
