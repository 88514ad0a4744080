//! The movement system and its phases: each frame, units indexed for avoidance (if on), then each
//! unit, in lockstep order in lockstep mode, started on a new path and stepped along it; the
//! claims of units that lost their mover released.

use bevy::prelude::*;

use crate::core::{Body, Cell, NavGrid};

use super::super::agent::NavAgent;
use super::super::claims::Claims;
use super::super::lockstep::{LockstepKey, sort_key};
use super::super::map::NavMap;
use super::super::orders::HoldPosition;
use super::super::outcomes::NavPath;
use super::super::pursuit::{Anchors, Pursuit};
use super::super::request::{PathOrigin, PathRequest, PathStatus, PendingRequests, SubmitInternal};
use super::super::settings::{CrowdSettings, TilepathSettings};
use super::super::traffic::PassageTraffic;
use super::claiming::{let_go, release_all};
use super::neighbours::{Member, Neighbours};
use super::output::{DesiredVelocity, write_move};
use super::walk::{start_path, step_unit};
use super::{Arrived, MoveState, Mover, MoverOrder, PathProgress};

/// What the movement system shares between units in one frame.
pub(super) struct Ctx<'a, 'w, 's> {
    pub(super) claims: &'a mut Claims,
    pub(super) book: &'a PendingRequests,
    pub(super) crowd: &'a CrowdSettings,
    pub(super) commands: Commands<'w, 's>,
    pub(super) arrived: MessageWriter<'w, Arrived>,
    pub(super) dt: f32,
    /// Seconds since the app started (one-way passages take turns by it).
    pub(super) clock: f32,
    /// The units by cell as they stood at the frame's start, with local avoidance on.
    pub(super) neighbours: Option<&'a Neighbours>,
    /// Neighbours' bodies, reused from unit to unit.
    pub(super) scratch: Vec<Body>,
    /// A unit's path's corridor (read when a unit steps aside for another).
    pub(super) corridor_of: &'a dyn Fn(Entity) -> Vec<Cell>,
    /// The passages wide units' paths still cross.
    pub(super) traffic: &'a mut PassageTraffic,
    /// Whether a unit gives way to another where one of two must (meeting head-on): the later
    /// in lockstep order in lockstep mode (the same on every client, whatever their entities),
    /// else the later entity.
    pub(super) gives_way: &'a dyn Fn(Entity, Entity) -> bool,
    /// Followed targets, where they stand.
    pub(super) anchors: &'a Anchors,
}

impl Ctx<'_, '_, '_> {
    /// Asks for a search of the plugin's own for `entity` (its [`PathRequest`] stays as it is).
    pub(super) fn submit(&mut self, entity: Entity, request: PathRequest, origin: PathOrigin) {
        self.commands.queue(SubmitInternal {
            entity,
            request,
            origin,
        });
    }
}

/// One unit's view of this frame.
pub(super) struct Unit<'a> {
    pub(super) entity: Entity,
    pub(super) mover: &'a Mover,
    /// The body's radius (against other units).
    pub(super) radius: f32,
    /// The body's radius against the walls of `grid` (grown by the class's footprint, so
    /// smaller; see [`MoveClass::wall_radius`](crate::core::MoveClass::wall_radius)).
    pub(super) wall_radius: f32,
    pub(super) map_entity: Entity,
    pub(super) map: &'a NavMap,
    /// The grid of the unit's class on `map` (the one its path was planned on).
    pub(super) grid: &'a NavGrid,
    /// Its class's footprint: rings of cells its body covers around its own.
    pub(super) footprint: u8,
    /// A version that changes with every edit of `grid` (the shared grid's under fog of war:
    /// what the unit's player sees changes its grid every frame, and a wall seen across its
    /// way repaths it).
    pub(super) edits_version: u64,
    pub(super) path: &'a NavPath,
    pub(super) status: PathStatus,
    /// The game's controller moves it (it has a [`DesiredVelocity`]): its body may lag behind
    /// the walk, and it arrives only once the body is close to the end.
    pub(super) controlled: bool,
    /// Loaded from a saved game with its path this frame: it walks on along it, and claims its
    /// cells anew.
    pub(super) resumed: bool,
    /// It holds its position ([`HoldPosition`]): it never makes way for others.
    pub(super) holds: bool,
    /// The unit it follows, on a follow order.
    pub(super) follows: Option<Entity>,
}

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
) {
    // In lockstep mode units are indexed and moved in their lockstep order.
    let lockstep = settings.lockstep.is_some();
    if settings.crowd.avoidance {
        index_units(&mut index, &maps, &units, lockstep.then_some(&order.0));
    }
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
    if lockstep {
        let mut iter = units.iter_many_mut(&order.0);
        while let Some(item) = iter.fetch_next() {
            move_one(&mut ctx, &maps, item);
        }
    } else {
        for item in &mut units {
            move_one(&mut ctx, &maps, item);
        }
    }
}

/// Moves one unit along its path (see [`move_units`]).
fn move_one(ctx: &mut Ctx, maps: &Query<&NavMap>, item: UnitItem) {
    let (
        entity,
        mover,
        agent,
        mut transform,
        path,
        mut progress,
        status,
        mut desired,
        holds,
        pursuit,
    ) = item;
    let Ok(map) = maps.get(path.map) else {
        if let Some(d) = &mut desired {
            d.velocity = Vec2::ZERO;
        }
        return;
    };
    let (wall_radius, footprint, fog) = match map.class_grid(path.class) {
        Some(Ok(c)) => (
            c.class().wall_radius(agent.radius),
            c.class().footprint,
            c.knowledge().is_some(),
        ),
        _ => (agent.radius, 0, false),
    };
    let grid = map.grid_of(path.class);
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
    let pos = map.world_to_grid(transform.translation.truncate());
    let progress = &mut *progress;
    let mut desired = desired.as_deref_mut();
    if let Some(d) = &mut desired {
        d.read_back(progress, pos);
    }
    let new_path = path.is_changed() && !resumed;
    if footprint > 0 && path.is_changed() {
        ctx.traffic.record(
            entity,
            (path.map, grid),
            path.ticket,
            &path.corridor,
            ctx.book.frame,
        );
    }
    if new_path {
        start_path(ctx, &unit, progress, pos);
    }
    let stepped = step_unit(ctx, &unit, progress, pos, new_path);
    if footprint > 0 {
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
/// their path (an order failed or taken back, with no other): those stand idle.
pub(crate) fn release_departed(
    mut claims: ResMut<Claims>,
    mut traffic: ResMut<PassageTraffic>,
    mut removed: RemovedComponents<Mover>,
    mut progress: Query<&mut PathProgress>,
    mut lost_path: RemovedComponents<NavPath>,
    pathless: Query<(), (With<Mover>, Without<NavPath>)>,
) {
    for entity in lost_path.read() {
        if pathless.contains(entity)
            && let Ok(mut p) = progress.get_mut(entity)
        {
            let_go(&mut claims, entity, &mut p);
            traffic.forget(entity);
        }
    }
    for entity in removed.read() {
        if let Ok(mut p) = progress.get_mut(entity) {
            release_all(&mut claims, entity, &mut p);
            p.intent = None; // forgotten below
        }
        // Despawned: its cells are found by scanning (rare).
        claims.forget_entity(entity);
        traffic.forget(entity);
    }
}
