//! The movement system and its phases: each frame, units indexed for avoidance (if on), then each
//! unit, in lockstep order in lockstep mode, started on a new path and stepped along it; the
//! claims of units that lost their mover released.

use bevy::prelude::*;

use crate::core::{Body, wall_radius};

use super::super::agent::NavAgent;
use super::super::claims::Claims;
use super::super::map::NavMap;
use super::super::orders::HoldPosition;
use super::super::outcomes::NavPath;
use super::super::pursuit::{Anchors, Pursuit};
use super::super::request::{PathOrigin, PathRequest, PathStatus, PendingRequests};
use super::super::settings::TilepathSettings;
use super::super::traffic::PassageTraffic;
use super::super::unit_order::{LockstepKey, sort_key};
use super::claiming::{let_go, release_all};
use super::cross::out_at_once;
use super::mover::{Arrived, Mover, MoverOrder};
use super::neighbours::{Member, Neighbours};
use super::output::{DesiredVelocity, write_move};
use super::state::{MoveState, PathProgress};
use super::stats::{MovementFrameStats, Stopwatch};
use super::unit::{Ctx, Unit};
use super::vehicle::{DriveProgress, Vehicle};
use super::walk::{start_path, step_unit};

/// The units [`move_units`] moves.
type Units<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static Mover,
        &'static NavAgent,
        &'static mut Transform,
        Ref<'static, NavPath>,
        &'static mut PathProgress,
        &'static PathStatus,
        Option<&'static mut DesiredVelocity>,
        Has<HoldPosition>,
        Option<&'static Pursuit>,
    ),
    Without<Vehicle>,
>;

/// One of [`Units`].
type UnitItem<'a> = (
    Entity,
    &'a Mover,
    &'a NavAgent,
    Mut<'a, Transform>,
    Ref<'a, NavPath>,
    Mut<'a, PathProgress>,
    &'a PathStatus,
    Option<Mut<'a, DesiredVelocity>>,
    bool,
    Option<&'a Pursuit>,
);

/// Follows paths: advances units, updates claims and occupancy, handles units in the way.
pub(crate) fn move_units(
    time: Res<Time>,
    settings: Res<TilepathSettings>,
    mut claims: ResMut<Claims>,
    book: Res<PendingRequests>,
    maps: Query<&NavMap>,
    mut units: Units,
    commands: Commands,
    arrived: MessageWriter<Arrived>,
    mut index: Local<Neighbours>,
    paths: Query<&NavPath>,
    order: Res<MoverOrder>,
    mut traffic: ResMut<PassageTraffic>,
    anchors: Res<Anchors>,
    keys: Query<Option<&LockstepKey>>,
    mut stats: ResMut<MovementFrameStats>,
    (map_ticks, mut map_count): (Query<Ref<NavMap>>, Local<usize>),
) {
    let mut watch = Stopwatch::start();
    // No map added, changed or gone since the last run: a unit found asleep then, untouched
    // since, is asleep still.
    let maps_now = map_ticks.iter().len();
    let maps_settled = std::mem::replace(&mut *map_count, maps_now) == maps_now
        && !map_ticks.iter().any(|m| m.is_changed());
    // In lockstep mode units are indexed and moved in their lockstep order.
    let lockstep = settings.lockstep.is_some();
    if settings.crowd.avoidance {
        index_units(&mut index, &maps, &units, lockstep.then_some(&order.0));
    }
    stats.index = watch.lap();
    // A free cell stays reserved while the search there waits.
    claims.keep_reservations(|unit| book.origin(unit) == Some(PathOrigin::GoalTaken));
    let mut ctx = Ctx {
        claims: &mut claims,
        book: &book,
        crowd: &settings.crowd,
        commands,
        arrived,
        dt: time.delta_secs(),
        clock: time.elapsed_secs(),
        neighbours: settings.crowd.avoidance.then_some(&*index),
        scratch: Vec::new(),
        corridor_of: &|e| paths.get(e).map(|p| p.corridor.clone()).unwrap_or_default(),
        traffic: &mut traffic,
        gives_way: &|unit, other| {
            if lockstep {
                let key = |e: Entity| (sort_key(e, keys.get(e).ok().flatten()), e);
                key(unit) > key(other)
            } else {
                unit > other
            }
        },
        anchors: &anchors,
    };
    let mut counts = [0u32; 3];
    let mut count = |kind: Kind| counts[kind as usize] += 1;
    if lockstep {
        let mut iter = units.iter_many_mut(&order.0);
        while let Some(item) = iter.fetch_next() {
            count(move_one(&mut ctx, (&maps, maps_settled), item));
        }
    } else {
        for item in &mut units {
            count(move_one(&mut ctx, (&maps, maps_settled), item));
        }
    }
    let (wall, cpu) = watch.stop();
    stats.steps = wall;
    let [moving, standing, asleep] = counts;
    (stats.moving, stats.standing, stats.asleep) = (moving, standing + asleep, asleep);
    stats.cpu += cpu;
}

/// What a unit's frame was (counted in [`MovementFrameStats`]).
#[derive(Clone, Copy)]
enum Kind {
    /// On its way.
    Moving,
    /// Standing, its frame's checks done.
    Standing,
    /// Standing with nothing to do (see [`asleep`]).
    Asleep,
}

/// Whether the standing unit's frame would change nothing: nothing touched it since it last
/// stood (not its path, its body, its controller or a saved game), it occupies the cell it
/// stands on, intends nothing, and nobody asked it to make way. A big army mostly stands: its
/// standing units cost a look at their components.
fn asleep(
    ctx: &Ctx,
    map: &NavMap,
    entity: Entity,
    transform: &Mut<Transform>,
    path: &Ref<NavPath>,
    progress: &PathProgress,
) -> bool {
    !path.is_changed()
        && !transform.is_changed()
        && !progress.state.is_underway()
        && progress.restored.is_none()
        && progress.intent.is_none()
        && progress.map == Some(path.map)
        && progress.stopped_cell.is_some_and(|stopped| {
            let at = map.world_to_grid(transform.translation.truncate());
            map.grid_of(path.class).cell_at(at) == stopped
        })
        && !ctx.claims.asked_to_make_way(entity)
}

/// Whether a unit found asleep at the last run is asleep still: nothing [`asleep`] reads of it
/// changed since (the maps aside, which the caller looks at). A standing army costs a look at
/// its change ticks and this flag.
fn still_asleep(
    ctx: &Ctx,
    entity: Entity,
    (transform, path, progress): (&Mut<Transform>, &Ref<NavPath>, &Mut<PathProgress>),
) -> bool {
    progress.asleep
        && !path.is_changed()
        && !transform.is_changed()
        && !progress.is_changed()
        && !ctx.claims.asked_to_make_way(entity)
}

/// Moves one unit along its path (see [`move_units`]); `maps_settled`: no map changed since
/// the last run.
fn move_one(ctx: &mut Ctx, (maps, maps_settled): (&Query<&NavMap>, bool), item: UnitItem) -> Kind {
    let (entity, mover, agent, transform, path, mut progress, status, mut desired, holds, pursuit) =
        item;
    if maps_settled
        && desired.is_none()
        && still_asleep(ctx, entity, (&transform, &path, &progress))
    {
        return Kind::Asleep;
    }
    let Ok(map) = maps.get(path.map) else {
        progress.bypass_change_detection().asleep = false;
        if let Some(d) = &mut desired {
            d.velocity = Vec2::ZERO;
        }
        return Kind::Standing;
    };
    // A unit its controller moves is never asleep: its controller reads its velocity each frame.
    let sleeps = desired.is_none() && asleep(ctx, map, entity, &transform, &path, &progress);
    progress.bypass_change_detection().asleep = sleeps;
    if sleeps {
        return Kind::Asleep;
    }
    let (footprint, fog) = match map.class_grid(path.class) {
        Some(Ok(c)) => (c.class().footprint, c.knowledge().is_some()),
        _ => (0, false),
    };
    let grid = map.grid_of(path.class);
    let wall_radius = wall_radius(grid, agent.radius, footprint);
    // A group's pace slows its faster units to it, a walking target's its followers close to it.
    let paced;
    let speed = walking_speed(mover, &path.request, pursuit);
    let mover = if speed < mover.speed {
        paced = Mover {
            speed,
            ..mover.clone()
        };
        &paced
    } else {
        mover
    };
    // A unit loaded from a saved game walks on along the path it had.
    let resumed = progress.restored.take() == Some(path.ticket);
    let unit = Unit {
        entity,
        mover,
        radius: agent.radius,
        wall_radius,
        map_entity: path.map,
        map,
        grid,
        footprint,
        edits_version: if fog {
            map.grid().version()
        } else {
            grid.version()
        },
        path: &path,
        status: *status,
        controlled: desired.is_some(),
        resumed,
        holds,
        follows: pursuit.map(|p| p.target),
    };
    step_one(
        ctx,
        &unit,
        &mut progress,
        transform,
        desired,
        path.is_changed(),
    );
    if progress.state.is_underway() {
        Kind::Moving
    } else {
        Kind::Standing
    }
}

/// Steps `unit` for the frame (a new path started first, if its path changed) and writes its
/// move: its `Transform`, or its controller's velocity.
fn step_one(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    mut transform: Mut<Transform>,
    mut desired: Option<Mut<DesiredVelocity>>,
    path_changed: bool,
) {
    let (entity, path, map) = (unit.entity, unit.path, unit.map);
    let pos = map.world_to_grid(transform.translation.truncate());
    let mut desired = desired.as_deref_mut();
    if let Some(d) = &mut desired {
        d.read_back(progress, pos);
    }
    let new_path = path_changed && !unit.resumed;
    if unit.footprint > 0 && path_changed {
        ctx.traffic.record(
            entity,
            (path.map, unit.grid),
            path.ticket,
            &path.corridor,
            ctx.book.frame,
        );
    }
    if new_path {
        start_path(ctx, unit, progress, pos);
    }
    let stepped = step_unit(ctx, unit, progress, pos, new_path);
    if unit.footprint > 0 {
        ctx.traffic.passed(entity, progress.cell_index);
    }
    let Some((to, heading)) = stepped else {
        if let Some(d) = desired {
            d.stand(pos);
        }
        return;
    };
    write_move(map, &mut transform, desired, (pos, to), heading, ctx.dt);
}

/// How fast `mover` walks on `request`: its speed, or its group's pace or its follow order's
/// pace ([`Pursuit::pace`]) if slower.
fn walking_speed(mover: &Mover, request: &PathRequest, pursuit: Option<&Pursuit>) -> f32 {
    let speed = request
        .pace
        .map_or(mover.speed, |pace| mover.speed.min(pace));
    pursuit
        .and_then(|p| p.pace)
        .map_or(speed, |pace| speed.min(pace))
}

/// The units as they stand at the frame's start, by cell, with their velocities (in `order`
/// where it is given: lockstep mode).
fn index_units(
    index: &mut Neighbours,
    maps: &Query<&NavMap>,
    units: &Units,
    order: Option<&[Entity]>,
) {
    index.clear();
    let items: Box<dyn Iterator<Item = _>> = match order {
        Some(order) => Box::new(units.iter_many(order)),
        None => Box::new(units.iter()),
    };
    for (entity, mover, agent, transform, path, progress, .., pursuit) in items {
        let Some(map) = progress.map else { continue };
        let Ok(nav) = maps.get(map) else { continue };
        let speed = match progress.state {
            MoveState::Moving | MoveState::WalkingThrough { .. } => {
                walking_speed(mover, &path.request, pursuit) * progress.speed_factor
            }
            _ => 0.0,
        };
        index.add(Member {
            entity,
            map,
            class: path.class,
            body: Body {
                position: nav.world_to_grid(transform.translation.truncate()),
                velocity: progress.heading * speed,
                radius: agent.radius,
            },
        });
    }
    index.build(|map| {
        maps.get(map)
            .ok()
            .map(|m| m.grid().extent().ceil().as_uvec2())
    });
}

/// Releases the claims and occupancy of units that lost their mover, and of units that lost
/// their path (an order failed or taken back, with no other): those stand idle, out at the exit
/// of a link they were crossing.
#[allow(clippy::too_many_arguments)]
pub(crate) fn release_departed(
    mut claims: ResMut<Claims>,
    mut traffic: ResMut<PassageTraffic>,
    mut removed: RemovedComponents<Mover>,
    mut progress: Query<(
        &mut PathProgress,
        Option<&mut DriveProgress>,
        &mut Transform,
    )>,
    mut lost_path: RemovedComponents<NavPath>,
    pathless: Query<(), (With<Mover>, Without<NavPath>)>,
    maps: Query<&NavMap>,
    mut commands: Commands,
    mut stats: ResMut<MovementFrameStats>,
) {
    let watch = Stopwatch::start();
    for entity in lost_path.read() {
        if pathless.contains(entity)
            && let Ok((mut p, drive, mut transform)) = progress.get_mut(entity)
        {
            let crossing = p
                .crossing
                .take()
                .or_else(|| drive.and_then(|mut d| d.crossing.take()));
            if let Some(crossing) = crossing
                && let Some(map) = p.map.and_then(|m| maps.get(m).ok())
            {
                let out = (&mut *claims, &mut commands);
                out_at_once(entity, crossing, (map, &mut transform), out);
            }
            let_go(&mut claims, entity, &mut p);
            traffic.forget(entity);
        }
    }
    for entity in removed.read() {
        if let Ok((mut p, ..)) = progress.get_mut(entity) {
            release_all(&mut claims, entity, &mut p);
            p.intent = None; // forgotten below
        }
        // Despawned: its cells are found by scanning (rare).
        claims.forget_entity(entity);
        traffic.forget(entity);
    }
    let (wall, cpu) = watch.stop();
    stats.release = wall;
    // The first of the movement systems each frame.
    stats.cpu = cpu;
}
