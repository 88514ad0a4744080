//! Follow orders ([`PathGoal::Entity`]): a follower's path goes to the cell its target stood on
//! when it was searched; each frame the plugin checks every follower against where its target
//! is now and asks for a search of its own only when the path no longer serves:
//!
//! - on its way, once the target is farther from the path's end than the follower's range plus
//!   [`PURSUIT_SLACK`] of the distance between them (a far follower does not chase every step
//!   of its target: its path is searched again as it closes in), a search toward where the
//!   target is now ([`PathOrigin::Pursuit`]; followers of one target searched in the same frame
//!   share one search, and later ones the cached tree);
//! - on its way, once [`CLOSE_IN`] tiles inside its range (at most half the range), a stop
//!   where it stands ([`PathOrigin::InRange`]): a target walking away then has a tile to go
//!   before it is out of range;
//! - standing (stopped in range, or at its path's end), once the target is out of range and
//!   has moved since, a search toward it again;
//! - after a failure (target out of reach, say), a search again once the target stands on
//!   another cell;
//! - its target despawned, one last search that fails with [`PathFailure::TargetGone`]
//!   (the follower stops, and its next queued order, if any, starts).
//!
//! The follower's [`PathRequest`] stays the game's follow order throughout; [`Pursuit`] tells
//! the game whether the follower is in range (where its attack would start).

use bevy::prelude::*;

use crate::core::Cell;
use crate::plugin::lockstep::{LockstepKey, lockstep_order};
use crate::plugin::map::NavMap;
use crate::plugin::orders::OrderQueue;
use crate::plugin::outcomes::NavPath;
use crate::plugin::request::{
    PathFailure, PathGoal, PathOrigin, PathRequest, PathStatus, PendingRequests, SubmitInternal,
};
use crate::plugin::settings::TilepathSettings;

/// Share of the distance between a follower and its target by which the target may stray from
/// the end of the follower's path (beyond the follower's range, plus half a tile) before the
/// path is searched again.
pub const PURSUIT_SLACK: f32 = 0.25;

/// Tiles inside its range a follower on its way walks on before it stops (at most half its
/// range): it sets off again once its target is out of range, so a target walking away does
/// not leave its range the moment the follower stops (nor does the follower start and stop at
/// the edge).
pub const CLOSE_IN: f32 = 1.0;

/// A follower within this many tiles of its path's last waypoint stands at its end.
const AT_END: f32 = 0.5;

/// A follower's pursuit, kept by the plugin on every unit with a follow order
/// ([`PathGoal::Entity`]): read [`Pursuit::in_range`] to know when it is close enough (to
/// attack, say).
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Component)]
pub struct Pursuit {
    /// The unit followed.
    #[entities]
    pub target: Entity,
    /// The cell the target stood on when the follower's latest search toward it was asked for
    /// (`None`: the game's own request, whose path ends there).
    pub aimed: Option<Cell>,
    /// Whether the follower was within its range of the target at the plugin's last check
    /// (this frame's, before movement).
    pub in_range: bool,
}

impl Pursuit {
    /// A pursuit of `target` that has not checked its range yet.
    fn of(target: Entity) -> Self {
        Pursuit {
            target,
            aimed: None,
            in_range: false,
        }
    }
}

/// What [`pursue`] reads of a follower.
type Follower = (
    Entity,
    &'static PathRequest,
    &'static PathStatus,
    Option<&'static NavPath>,
    &'static Transform,
    Option<&'static mut Pursuit>,
    Option<&'static OrderQueue>,
);

/// Checks every follower against its target (see the module's documentation): in lockstep
/// mode in the units' lockstep order, so their searches queue in the same order everywhere.
pub(crate) fn pursue(
    mut followers: Query<Follower>,
    targets: Query<&Transform>,
    maps: Query<&NavMap>,
    book: Res<PendingRequests>,
    settings: Res<TilepathSettings>,
    keys: Query<(Entity, &PathRequest, Option<&LockstepKey>)>,
    mut order: Local<Vec<Entity>>,
    mut commands: Commands,
) {
    let only_map = {
        let mut it = maps.iter();
        match (it.next(), it.next()) {
            (Some(m), None) => Some(m),
            _ => None,
        }
    };
    let mut check = |item: <Follower as bevy::ecs::query::QueryData>::Item<'_, '_>| {
        let (entity, request, status, path, transform, pursuit, queue) = item;
        let PathGoal::Entity { target, range } = request.goal else {
            return;
        };
        if book.contains(entity) {
            return;
        }
        let map = match path.map(|p| p.map).or(request.map) {
            Some(m) => maps.get(m).ok(),
            None => only_map,
        };
        let Some(map) = map else { return };
        let mut state = match &pursuit {
            Some(p) if p.target == target => **p,
            _ => Pursuit::of(target),
        };
        let ask = check_one(
            &mut state,
            (request, *status, path, transform),
            targets.get(target).ok(),
            map,
            range,
        );
        // A failed follower with orders queued after it goes on to those.
        let ask = ask.filter(|_| {
            !(matches!(status, PathStatus::Failed(_)) && queue.is_some_and(|q| !q.goals.is_empty()))
        });
        if let Some((request, origin)) = ask {
            commands.queue(SubmitInternal {
                entity,
                request,
                origin,
            });
        }
        match pursuit {
            Some(mut p) => {
                if *p != state {
                    *p = state;
                }
            }
            None => {
                commands.entity(entity).try_insert(state);
            }
        }
    };
    if settings.lockstep.is_some() {
        let follows = keys
            .iter()
            .filter(|(_, r, _)| matches!(r.goal, PathGoal::Entity { .. }))
            .map(|(e, _, k)| (e, k));
        lockstep_order(follows, &mut order);
        let mut iter = followers.iter_many_mut(&order);
        while let Some(item) = iter.fetch_next() {
            check(item);
        }
    } else {
        for item in &mut followers {
            check(item);
        }
    }
}

/// One follower's check: updates `state` and returns the search to ask for, if any.
fn check_one(
    state: &mut Pursuit,
    (request, status, path, transform): (&PathRequest, PathStatus, Option<&NavPath>, &Transform),
    target: Option<&Transform>,
    map: &NavMap,
    range: f32,
) -> Option<(PathRequest, PathOrigin)> {
    let Some(target) = target else {
        // Gone: one last search, which fails (unless it has failed so already).
        state.in_range = false;
        return (status != PathStatus::Failed(PathFailure::TargetGone))
            .then(|| (request.clone(), PathOrigin::Pursuit));
    };
    let at = map.world_to_grid(target.translation.truncate());
    let here = map.world_to_grid(transform.translation.truncate());
    let distance = here.distance(at);
    state.in_range = distance <= range;
    let target_cell = map.world_to_cell(target.translation.truncate());
    let aim = |state: &mut Pursuit| {
        state.aimed = target_cell;
        Some((request.clone(), PathOrigin::Pursuit))
    };
    match status {
        PathStatus::Failed(PathFailure::TargetGone) => None,
        PathStatus::Failed(_) => (state.aimed != target_cell).then(|| aim(state)).flatten(),
        PathStatus::Found => {
            let path = path?;
            if path.origin == PathOrigin::StepAside {
                return None; // it resumes by itself
            }
            let stopped = matches!(path.origin, PathOrigin::InRange | PathOrigin::MakeWay);
            let at_end = path
                .waypoints
                .last()
                .is_none_or(|&end| here.distance(map.world_to_grid(end)) <= AT_END);
            let aimed = state.aimed.unwrap_or(path.goal);
            if stopped || at_end {
                // Standing: off again once the target is out of range (and has moved since
                // the follower's path went to it: a path that ended short of the range, in a
                // crowd say, is not searched again and again).
                let moved = target_cell != Some(aimed) || stopped;
                (!state.in_range && moved).then(|| aim(state)).flatten()
            } else if distance <= (range - CLOSE_IN).max(range * 0.5) {
                // On its way, well within range: stop where it stands.
                let stop = PathRequest {
                    goal: PathGoal::World(transform.translation.truncate()),
                    ..request.clone()
                };
                Some((stop, PathOrigin::InRange))
            } else {
                let strayed = map.grid().cell_center(aimed).distance(at);
                (strayed > range + PURSUIT_SLACK * distance + 0.5)
                    .then(|| aim(state))
                    .flatten()
            }
        }
        _ => None,
    }
}
