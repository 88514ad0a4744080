//! Follow orders ([`PathGoal::Entity`]): the game's request goes to the cell its target stands
//! on; after that, each frame, the plugin checks every follower against where its target is
//! and asks for a search of its own only when the follower's path no longer serves.
//!
//! Each followed target has an *anchor*: the cell it will reach in [`LEAD`] seconds at the
//! speed it moved last frame (its own cell when it stands), kept until the target is
//! [`ANCHOR_STEP`] tiles from it. Followers aim at the anchor, so they head where the target
//! goes, not where it was, and all the followers of one target that need a new path in a frame
//! ask for the same cell and share one search ([`PathOrigin::Pursuit`]). A follow order's
//! searches do not price the claims and cells of the target's other followers (they move on
//! with it), and price other units' claims and stopped units' cells at
//! [`TilepathSettings::follow_claim_penalty`] (a tile) instead of a claim's price and a block:
//! a follower sent round a wall for a gap others claimed or stood in is out of range for
//! seconds.
//!
//! - On its way, a follower gets a new path once its target's anchor is farther from its
//!   path's end than the distance at which it stops plus [`PURSUIT_SLACK`] of the distance
//!   between the two (a far follower does not chase every step of its target).
//! - On its way, [`CLOSE_IN`] tiles inside its range (at most half the range), it walks on at
//!   its target's speed while the target walks ([`Pursuit::pace`]), and stops where it stands
//!   once the target stands ([`PathOrigin::InRange`]). A follower that stopped each time it
//!   came close and set off each time the target drew away (as before) searched twice as
//!   often, and the stops and starts of the followers ahead held up the ones behind.
//! - Stopped in range, it sets off again once the target is more than half of [`CLOSE_IN`]
//!   inside the range's edge, before the target is out of range.
//! - At its path's end (or stopped short of it, beside a crowd), not close enough, it sets off
//!   again once the target has left the cell the path went to.
//! - At its path's end on a cell another unit stands on, it takes, of the free cells nearest
//!   it, the one nearest its target (not the first found, which may lie out of range).
//! - After a failure (the target out of reach, say), it tries again once the anchor moves.
//! - Its target despawned, one last search fails with [`PathFailure::TargetGone`]: the
//!   follower stops, and its next queued order, if any, starts.
//!
//! The follower's [`PathRequest`] stays the game's follow order throughout; [`Pursuit`] tells
//! the game whether the follower is in range (where its attack would start).

use bevy::platform::collections::HashMap;
use bevy::prelude::*;

use super::movement::state::{MoveState, PathProgress};
use crate::core::{Cell, NavGrid};
use crate::plugin::map::NavMap;
use crate::plugin::orders::OrderQueue;
use crate::plugin::outcomes::NavPath;
use crate::plugin::request::{
    PathFailure, PathGoal, PathOrigin, PathRequest, PathStatus, PendingRequests, SubmitInternal,
};
use crate::plugin::settings::TilepathSettings;
use crate::plugin::unit_order::{LockstepKey, lockstep_order};

/// Share of the distance between a follower and its target by which the target's anchor may
/// stray from the end of the follower's path (beyond the distance at which the follower
/// stops) before the path is searched again.
pub const PURSUIT_SLACK: f32 = 0.25;

/// Tiles inside its range a follower on its way walks on before it stops (at most half its
/// range): a target walking away does not leave its range the moment the follower stops, and
/// the follower sets off again before it does. Measured with `army --scene pursuit` (200
/// followers on 20 wandering targets, seeds 1-3): 1.5 tiles keeps followers of range 3 in range
/// 94.6-95.0 % of the time among walls, against 87.1-88.1 % for 1 tile, with fewer searches.
pub const CLOSE_IN: f32 = 1.5;

/// Seconds ahead a followed target's anchor leads it, at the speed the target moved last frame.
pub const LEAD: f32 = 1.0;

/// Tiles a followed target's lead point moves from its anchor before the anchor moves (see
/// the module's documentation).
pub const ANCHOR_STEP: f32 = 1.5;

/// Tiles a second a followed target walks at least (last frame) for a follower close to it to
/// walk on at its pace rather than stop (slower, it is standing, jostled by a crowd say).
const PACE_FROM: f32 = 1.0;

/// A follower within this many tiles of its path's last waypoint stands at its end.
const AT_END: f32 = 0.5;

/// Tiles a target may move in one frame and still count as walking (more: it was placed
/// elsewhere, and its anchor does not lead it).
const TELEPORT: f32 = 1.0;

/// A follower's pursuit, kept by the plugin on every unit with a follow order
/// ([`PathGoal::Entity`]) and removed once the unit's order is another: read
/// [`Pursuit::in_range`] to know when it is close enough (to attack, say).
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Component)]
pub struct Pursuit {
    /// The unit followed.
    #[entities]
    pub target: Entity,
    /// The target's anchor (see the [module](self)'s documentation) when the follower last
    /// asked for a path toward it (`None`: not yet; the game's own request went to the
    /// target's cell).
    pub aimed: Option<Cell>,
    /// Whether the follower was within its range of the target at the plugin's last check
    /// (this frame's, before movement).
    pub in_range: bool,
    /// The speed (tiles a second) the follower keeps to while it walks close to its walking
    /// target, the target's own last frame (`None`: the follower's own speed). Set by the
    /// plugin each frame; the movement walks the follower no faster.
    pub pace: Option<f32>,
}

impl Pursuit {
    /// A pursuit of `target` that has not checked its range yet.
    fn of(target: Entity) -> Self {
        Pursuit {
            target,
            aimed: None,
            in_range: false,
            pace: None,
        }
    }
}

/// How close a follower with `range` comes before it stops: [`CLOSE_IN`] tiles inside its
/// range, at most half of it.
pub(crate) fn stop_within(range: f32) -> f32 {
    (range - CLOSE_IN).max(range * 0.5)
}

/// What [`pursue`] reads of a follower.
type FollowerItem = (
    Entity,
    &'static PathRequest,
    &'static PathStatus,
    Option<&'static NavPath>,
    &'static Transform,
    Option<&'static mut Pursuit>,
    Option<&'static OrderQueue>,
    Option<&'static PathProgress>,
);

/// A followed target this frame, on one map: where it stands (grid space), its cell and its
/// anchor.
#[derive(Clone, Copy)]
struct Seen {
    at: Vec2,
    cell: Cell,
    anchor: Cell,
    /// Tiles a second it moved last frame.
    speed: f32,
}

/// Every followed target's anchor, by target and map, this frame and the one before, and who
/// follows whom (a resource: the movement reads where followed targets stand, the queue who
/// follows the same target).
#[derive(Resource, Default)]
pub(crate) struct Anchors {
    now: HashMap<(Entity, Entity), Seen>,
    before: HashMap<(Entity, Entity), Seen>,
    follows: HashMap<Entity, Entity>,
}

impl Anchors {
    /// Begins a frame: anchors of targets nobody follows any more are dropped by its end.
    fn next_frame(&mut self) {
        std::mem::swap(&mut self.now, &mut self.before);
        self.now.clear();
        self.follows.clear();
    }

    /// Notes that `unit` follows `target` this frame.
    pub(crate) fn follow(&mut self, unit: Entity, target: Entity) {
        self.follows.insert(unit, target);
    }

    /// The target `unit` follows (its order at this frame's check), if any.
    pub(crate) fn target_of(&self, unit: Entity) -> Option<Entity> {
        self.follows.get(&unit).copied()
    }

    /// Whether `unit` follows one of `targets`.
    pub(crate) fn follows_one_of(&self, unit: Entity, targets: &[Entity]) -> bool {
        self.target_of(unit).is_some_and(|t| targets.contains(&t))
    }

    /// Where `target` stands on `map` (grid space) this frame, if a follower checked it.
    pub(crate) fn target_at(&self, target: Entity, map: Entity) -> Option<Vec2> {
        self.now.get(&(target, map)).map(|s| s.at)
    }

    /// The target `key` with this `transform` on `map`, if it stands on the map (see
    /// [`Anchors::see`]).
    fn see_at(
        &mut self,
        transform: &Transform,
        key: (Entity, Entity),
        map: &NavMap,
        dt: f32,
    ) -> Option<Seen> {
        let world = transform.translation.truncate();
        let cell = map.world_to_cell(world)?;
        let at = map.world_to_grid(world);
        Some(self.see(key, map.grid(), (at, cell), dt))
    }

    /// The target `key` standing at `at` (grid space) on `cell` of `grid`, with its anchor:
    /// kept while the point it will reach in [`LEAD`] seconds (`lead_scale`: [`LEAD`] over
    /// the frame's time) is within [`ANCHOR_STEP`] tiles, else that point's cell (its own if
    /// that cell is blocked or on another island).
    fn see(
        &mut self,
        key: (Entity, Entity),
        grid: &NavGrid,
        (at, cell): (Vec2, Cell),
        dt: f32,
    ) -> Seen {
        if let Some(&seen) = self.now.get(&key) {
            return seen;
        }
        let before = self.before.get(&key).copied();
        let step = before.map_or(Vec2::ZERO, |b| at - b.at);
        let walking = step.length_squared() <= TELEPORT * TELEPORT && dt > 0.0;
        let (lead, speed) = if walking {
            (at + step * (LEAD / dt), step.length() / dt)
        } else {
            (at, 0.0)
        };
        let anchor = match before {
            Some(b) if grid.cell_center(b.anchor).distance(lead) <= ANCHOR_STEP => b.anchor,
            _ => {
                let ahead = grid.cell_at(lead);
                let open = grid.in_bounds(ahead)
                    && grid.is_walkable(ahead)
                    && grid.island(ahead) == grid.island(cell);
                if open { ahead } else { cell }
            }
        };
        let seen = Seen {
            at,
            cell,
            anchor,
            speed,
        };
        self.now.insert(key, seen);
        seen
    }
}

/// Checks every follower against its target (see the [module](self)'s documentation): in
/// lockstep mode in the units' lockstep order, so their searches queue in the same order
/// everywhere.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pursue(
    mut followers: Query<FollowerItem>,
    targets: Query<&Transform>,
    maps: Query<(Entity, &NavMap)>,
    book: Res<PendingRequests>,
    settings: Res<TilepathSettings>,
    time: Res<Time>,
    keys: Query<(Entity, &PathRequest, Option<&LockstepKey>)>,
    mut order: Local<Vec<Entity>>,
    mut anchors: ResMut<Anchors>,
    mut commands: Commands,
) {
    anchors.next_frame();
    let dt = time.delta_secs();
    // A follow order without a map of its own is on the only map, if there is one.
    let only_map = {
        let mut it = maps.iter();
        it.next().filter(|_| it.next().is_none())
    };
    let mut check = |item: <FollowerItem as bevy::ecs::query::QueryData>::Item<'_, '_>| {
        let (entity, request, status, path, transform, pursuit, queue, progress) = item;
        let PathGoal::Entity { target, range } = request.goal else {
            // Its order is no longer a follow: no pursuit to report.
            if pursuit.is_some() {
                commands.entity(entity).remove::<Pursuit>();
            }
            return;
        };
        let map = path.map(|p| p.map).or(request.map);
        let Some((map_entity, map)) = map.map_or(only_map, |m| maps.get(m).ok()) else {
            return;
        };
        anchors.follow(entity, target);
        // The target (and its anchor, seen every frame it is followed, a search pending or
        // not: its lead comes from its last frame's move).
        let target_at = targets.get(target).ok();
        let seen = target_at.and_then(|t| anchors.see_at(t, (target, map_entity), map, dt));
        if book.contains(entity) {
            return;
        }
        let mut state = match &pursuit {
            Some(p) if p.target == target => **p,
            _ => Pursuit::of(target),
        };
        let follower = Follower::of(map, transform, progress);
        let unit = (request, status, path, queue);
        let ask = asked(
            &mut state,
            unit,
            follower,
            target_at.is_some(),
            seen,
            (map, range),
        );
        if let Some((request, origin)) = ask {
            commands.queue(SubmitInternal {
                entity,
                request: aimed(request, origin, seen, map, path),
                origin,
            });
        }
        report(&mut commands, entity, pursuit, state);
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

/// The follower's [`Pursuit`] as it stands this frame (changed only if it changed).
fn report(commands: &mut Commands, entity: Entity, pursuit: Option<Mut<Pursuit>>, state: Pursuit) {
    match pursuit {
        Some(mut p) => {
            p.set_if_neq(state);
        }
        None => {
            commands.entity(entity).try_insert(state);
        }
    }
}

/// What a follower asks for this frame, if anything (see [`check_one`]): a gone target's
/// follower one last search, which fails (unless it has failed so already); a failed follower
/// with orders queued after it nothing (it goes on to those).
fn asked(
    state: &mut Pursuit,
    (request, status, path, queue): (
        &PathRequest,
        &PathStatus,
        Option<&NavPath>,
        Option<&OrderQueue>,
    ),
    follower: Follower,
    target_there: bool,
    seen: Option<Seen>,
    (map, range): (&NavMap, f32),
) -> Option<(PathRequest, PathOrigin)> {
    let ask = if !target_there {
        state.in_range = false;
        state.pace = None;
        (*status != PathStatus::Failed(PathFailure::TargetGone))
            .then(|| (request.clone(), PathOrigin::Pursuit))
    } else {
        seen.and_then(|seen| check_one(state, (request, *status, path), follower, seen, map, range))
    };
    ask.filter(|_| {
        !(matches!(status, PathStatus::Failed(_)) && queue.is_some_and(|q| !q.goals.is_empty()))
    })
}

/// `request` as it is sent: a pursuit goes to the target's anchor, where the follower's class
/// can stand (the target's own cell otherwise).
fn aimed(
    mut request: PathRequest,
    origin: PathOrigin,
    seen: Option<Seen>,
    map: &NavMap,
    path: Option<&NavPath>,
) -> PathRequest {
    if origin == PathOrigin::Pursuit
        && let Some(seen) = seen
    {
        let class = path.map(|p| p.class).unwrap_or_default();
        let anchor = if map.grid_of(class).is_walkable(seen.anchor) {
            seen.anchor
        } else {
            seen.cell
        };
        request.goal = PathGoal::Cell(anchor);
    }
    request
}

/// A follower as [`check_one`] sees it: where it stands (grid space), and whether it has
/// arrived (stopped at or short of its path's end).
#[derive(Clone, Copy)]
struct Follower {
    here: Vec2,
    arrived: bool,
}

impl Follower {
    /// The follower with this `transform` and `progress` on `map`.
    fn of(map: &NavMap, transform: &Transform, progress: Option<&PathProgress>) -> Self {
        Follower {
            here: map.world_to_grid(transform.translation.truncate()),
            arrived: progress.is_some_and(|p| p.state == MoveState::Arrived),
        }
    }
}

/// One follower's check against its target, `seen`: updates `state` and returns the search to
/// ask for, if any (a stop where it stands, or a pursuit, whose goal the caller sets).
fn check_one(
    state: &mut Pursuit,
    (request, status, path): (&PathRequest, PathStatus, Option<&NavPath>),
    follower: Follower,
    seen: Seen,
    map: &NavMap,
    range: f32,
) -> Option<(PathRequest, PathOrigin)> {
    let distance = follower.here.distance(seen.at);
    state.in_range = distance <= range;
    state.pace = None;
    let aim = |state: &mut Pursuit| {
        state.aimed = Some(seen.anchor);
        Some((request.clone(), PathOrigin::Pursuit))
    };
    let stop_within = stop_within(range);
    match status {
        PathStatus::Failed(PathFailure::TargetGone) => None,
        PathStatus::Failed(_) => (state.aimed != Some(seen.anchor))
            .then(|| aim(state))
            .flatten(),
        PathStatus::Found => {
            let path = path?;
            if path.origin == PathOrigin::StepAside {
                return None; // it resumes by itself
            }
            if matches!(path.origin, PathOrigin::InRange | PathOrigin::MakeWay) {
                // Stopped in range: off again before the target is out of range.
                return (distance > range - CLOSE_IN * 0.5)
                    .then(|| aim(state))
                    .flatten();
            }
            let at_end = follower.arrived
                || path
                    .waypoints
                    .last()
                    .is_none_or(|&end| follower.here.distance(map.world_to_grid(end)) <= AT_END);
            if at_end {
                // At the end of a path (or stopped short of it): on after the target if it is
                // not close enough and has left the cell the path went to (a path that ended
                // short of the target, in a crowd say, is not searched again and again).
                (distance > stop_within && seen.cell != path.goal && seen.anchor != path.goal)
                    .then(|| aim(state))
                    .flatten()
            } else if distance <= stop_within && seen.speed > PACE_FROM {
                // On its way, close to a target on the move: walk on at its pace.
                state.pace = Some(seen.speed);
                None
            } else if distance <= stop_within {
                // On its way, close enough: stop where it stands.
                let stop = PathRequest {
                    goal: PathGoal::World(map.grid_to_world(follower.here)),
                    ..request.clone()
                };
                Some((stop, PathOrigin::InRange))
            } else {
                // On its way: a new path once the target's anchor has strayed from the path's
                // end (by more the farther the follower is).
                let grid = map.grid();
                let aimed = state.aimed.unwrap_or(path.goal);
                let strayed = grid
                    .cell_center(aimed)
                    .distance(grid.cell_center(seen.anchor));
                (strayed > stop_within + PURSUIT_SLACK * distance)
                    .then(|| aim(state))
                    .flatten()
            }
        }
        _ => None,
    }
}
