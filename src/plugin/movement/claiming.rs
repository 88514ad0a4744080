//! A unit's claims on the cells ahead and the intent it tells the others.

use bevy::prelude::*;

use crate::core::{Cell, cells_around};

use super::super::claims::{Claims, Intent};
use super::state::{MoveState, PathProgress};
use super::unit::Unit;

/// Claims: the current and next few cells of the corridor, never the ones left behind (for a
/// wide unit, every cell its footprint covers on them).
pub(super) fn update_claims(claims: &mut Claims, unit: &Unit, progress: &mut PathProgress) {
    let cells = &unit.path.corridor;
    let lo = progress.cell_index.saturating_sub(1);
    let hi = (progress.cell_index + unit.mover.claim_ahead).min(cells.len());
    let mut window: &[Cell] = &cells[lo.min(hi)..hi];
    let grown;
    if unit.footprint > 0 {
        let mut cells: Vec<Cell> = window
            .iter()
            .flat_map(|&c| cells_around(c, unit.footprint))
            .collect();
        cells.sort_by_key(|c| (c.y, c.x));
        cells.dedup();
        grown = cells;
        window = &grown;
    }
    while progress
        .claimed
        .front()
        .is_some_and(|c| !window.contains(c))
    {
        let c = progress.claimed.pop_front().expect("non-empty");
        claims.release(unit.map_entity, c, unit.entity);
    }
    for &c in window {
        if !progress.claimed.contains(&c) {
            claims.claim(unit.map_entity, c, unit.entity);
            progress.claimed.push_back(c);
        }
    }
}

/// Tells `claims` where the unit is and goes, if that changed since it last did.
pub(super) fn publish_intent(
    claims: &mut Claims,
    entity: Entity,
    progress: &mut PathProgress,
    intent: Option<Intent>,
) {
    if progress.intent != intent {
        progress.intent = intent;
        claims.set_intent(entity, intent);
    }
}

/// The unit's path is gone (its order failed or was taken back with no other): it claims,
/// occupies and intends nothing any more, and stands idle.
pub(super) fn let_go(claims: &mut Claims, entity: Entity, progress: &mut PathProgress) {
    if let Some(map) = progress.map {
        claims.set_stopped(map, entity, progress.stopped_cell.take(), None, 0);
        claims.set_moving_at(map, entity, progress.moving_cell.take(), None);
    }
    release_all(claims, entity, progress);
    publish_intent(claims, entity, progress, None);
    progress.state = MoveState::Idle;
    progress.leg = None;
}

pub(super) fn release_all(claims: &mut Claims, entity: Entity, progress: &mut PathProgress) {
    let Some(map) = progress.map else {
        progress.claimed.clear();
        return;
    };
    for c in progress.claimed.drain(..) {
        claims.release(map, c, entity);
    }
}
