//! A small seeded generator for the core's unit tests (xorshift32: the same numbers everywhere).

/// Numbers below `n` (each call's `n`), from `seed` (not 0).
pub(crate) fn below(mut seed: u32) -> impl FnMut(u32) -> u32 {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed % n
    }
}
