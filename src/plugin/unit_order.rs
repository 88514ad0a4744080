//! The stable order units are handled in, in lockstep mode ([`LockstepKey`]; see
//! [`Lockstep`](crate::plugin::settings::Lockstep)): movement, pushes, follow orders and repaths
//! go through units in this order, so every client handles them alike.

use bevy::prelude::*;

/// A unit's key in lockstep mode: units are moved, pushed and repathed in the order of their
/// keys, so every client handles them in the same order even where their entities differ (give
/// each unit the same key on every client, e.g. the id your netcode gives it). Units without a
/// key come after those with one, in the order of their entities (the same on every client that
/// spawns and despawns in the same order). Outside lockstep mode it is not read.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Reflect)]
#[reflect(Component)]
pub struct LockstepKey(pub u64);

/// The order lockstep mode handles units in: by key, then by entity index and generation.
pub(crate) fn sort_key(entity: Entity, key: Option<&LockstepKey>) -> (bool, u64) {
    match key {
        Some(k) => (false, k.0),
        None => (
            true,
            (u64::from(entity.index_u32()) << 32) | u64::from(entity.generation().to_bits()),
        ),
    }
}

/// `units` in lockstep order (see [`LockstepKey`]), into `out`.
pub(crate) fn lockstep_order<'a>(
    units: impl Iterator<Item = (Entity, Option<&'a LockstepKey>)>,
    out: &mut Vec<Entity>,
) {
    let mut keyed: Vec<((bool, u64), Entity)> = units.map(|(e, k)| (sort_key(e, k), e)).collect();
    keyed.sort_unstable_by_key(|&(k, _)| k);
    out.clear();
    out.extend(keyed.into_iter().map(|(_, e)| e));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_units_come_first_in_key_order_then_the_rest_by_entity() {
        let e = |i: u32| Entity::from_raw_u32(i).unwrap();
        let (k1, k2) = (LockstepKey(7), LockstepKey(3));
        let units = [
            (e(1), None),
            (e(5), Some(&k1)),
            (e(0), None),
            (e(9), Some(&k2)),
        ];
        let mut out = Vec::new();
        lockstep_order(units.into_iter(), &mut out);
        assert_eq!(out, vec![e(9), e(5), e(0), e(1)]);
    }
}
