//! Pushing: after the frame's moves, bodies that overlap are pushed apart (StarCraft-style
//! shoving). A unit on its way pushes a standing (idle or arrived) unit aside instead of asking
//! it to repath; units of the same kind share the push. A push never moves a body onto a blocked
//! cell (it slides along the wall, or stays). A unit walking through others (the crowd's last
//! resort) is never pushed, and shoves the bodies it overlaps out of its way (two walking
//! through leave each other alone): left among them, as it was before, it overlapped three or
//! four bodies at a time for the seconds it walked. Pushed units settle where they are pushed;
//! a unit on its way walks on along its curve with the push as an offset that fades, so it
//! drifts back onto its smoothed path without planning it again.

use bevy::ecs::entity::EntityHashSet;
use bevy::prelude::*;
use bevy::tasks::{ComputeTaskPool, ParallelSlice, TaskPool};

use crate::core::{Body, Cell, NavGrid, fmath, overlaps_blocked, wall_radius};

use super::mover::{Mover, MoverOrder};
use super::neighbours::{Member, Neighbours};
use super::output::DesiredVelocity;
use super::state::{MoveState, PathProgress};
use super::stats::{MovementFrameStats, Stopwatch};
use super::vehicle::Vehicle;
use crate::plugin::agent::NavAgent;
use crate::plugin::classes::ClassId;
use crate::plugin::map::NavMap;
use crate::plugin::orders::HoldPosition;
use crate::plugin::settings::{CrowdSettings, TilepathSettings};

/// Passes over the overlapping pairs per frame (each resolves what the one before left, as
/// pushes chain through a crowd): the first [`FULL_PASSES`] part every overlap, the rest only
/// overlaps deeper than [`DEEP`] of the sum of the two radii (the few that the crowd presses
/// together), so they cost little.
const PASSES: usize = 32;
const FULL_PASSES: usize = 8;
const DEEP: f32 = 0.1;

/// How much further apart than the pushing distance (in squared distance) a pair is left out
/// without the exact test: far above `f32` rounding, so no pair the test would push is missed.
const APART_MARGIN: f32 = 1.001;

/// Bodies [`Pairs::of_one`] sifts at a time (a row of squares in a dense crowd holds a few
/// dozen).
const SCAN_CHUNK: usize = 64;

/// In the passes after the first [`FULL_PASSES`], a push of a body shorter than this (tiles)
/// moves nothing: in a crowd pressed together, pushes from all sides nearly cancel, and bodies
/// shifted by a hair each pass kept every pass busy (a battle's melee: a thousand or two bodies
/// in each of the 24 deep passes, every frame). A thousandth of a tile is below anything a
/// player sees; the full passes still part every overlap.
const MIN_PUSH: f32 = 1e-3;

/// A body is pushed at most this many passes' steps in one frame, all passes together: pushes
/// chained through a dense crowd never make it leap.
const MAX_FRAME_STEPS: f32 = 3.0;

/// Active bodies a thread finds the pairs of at a time, on the compute task pool: a pass with
/// fewer than two chunks' worth stays on the system's thread (a hand-off costs a few
/// microseconds; a body's pairs well under one).
const PARALLEL_CHUNK: usize = 256;

/// Units whose headings are further apart than this (the cosine, negated) meet head-on; in line
/// if the other is less than [`IN_LINE`] to the side (of the unit direction to it); how much of
/// the straight push is kept with the sideways one ([`ALONG`]).
const HEAD_ON: f32 = 0.5;
const IN_LINE: f32 = 0.2;
const ALONG: f32 = 0.25;

/// Seconds a unit on its way has gone without getting a tile anywhere before it counts as
/// jostling at the gate ahead (see [`Entering`]): two side by side at one, each pressed against
/// a post by the other, never get a tile. A quarter second, less than a free walk takes for a
/// tile: a unit slowed at a gate lets the nearer go first at once, and files through gates
/// one cell wide moved sooner (BENCHMARKS.md, how the defaults were chosen: crowds).
const GATE_JOSTLE: f32 = 0.25;

/// A unit on its way that has jostled for [`GATE_JOSTLE`] seconds to enter `gate`, the next cell
/// of its path (in a passage one cell wide on its class's grid), with the gate's centre
/// `to_centre` from its body. Of two such units at one gate from the same side, the nearer goes
/// first ([`first_into_gate`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Entering {
    gate: Cell,
    to_centre: Vec2,
}

/// Which of the bodies `i` and `j` goes into their gate first, if both jostle at the same gate
/// from the same side (see [`Entering`]): the nearer (on a tie, the first indexed: in lockstep
/// mode the first in lockstep order). It takes none of their push and the other all of it:
/// with the push shared, two bodies side by side each kept the other pressed against a post of
/// the gate until the crowd's last resort.
fn first_into_gate(i: usize, j: usize, entering: &[Option<Entering>]) -> Option<usize> {
    let (a, b) = (entering[i]?, entering[j]?);
    if a.gate != b.gate || a.to_centre.dot(b.to_centre) <= 0.0 {
        return None;
    }
    let (da, db) = (a.to_centre.length(), b.to_centre.length());
    Some(if da < db || da == db && i < j { i } else { j })
}

/// How a unit takes part in pushing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Role {
    /// On its way (moving or waiting).
    Underway,
    /// Idle or arrived, or waiting for a one-way passage.
    Standing,
    /// Walking through others (the crowd's last resort): never pushed; the bodies it overlaps,
    /// but for others walking through, are shoved out of its way.
    WalkingThrough,
    /// Holding its position ([`HoldPosition`]): never moved; the other body takes the push.
    Anchored,
    /// A [`Vehicle`] on its way: never moved (it drives its plan); the bodies it meets are
    /// shoved aside, out of its way, as by a unit walking through.
    Driving,
    /// A [`Vehicle`] standing (arrived, idle, or waiting for a plan or for another vehicle):
    /// parted half and half from another standing and from infantry standing; shoved aside by
    /// a vehicle driving, a unit walking through or one holding its position; anchored against
    /// infantry on their way. It slides, it never turns; driving on, it slides back onto its
    /// plan.
    Parked,
}

impl Role {
    /// `patient`: waiting for a one-way passage (it is shoved aside like a standing unit, out
    /// of the way of the units coming out).
    fn of(state: MoveState, patient: bool) -> Role {
        match state {
            MoveState::Waiting { .. } if patient => Role::Standing,
            MoveState::Moving | MoveState::Waiting { .. } => Role::Underway,
            MoveState::Idle | MoveState::Arrived => Role::Standing,
            MoveState::WalkingThrough { .. } => Role::WalkingThrough,
        }
    }
}

/// The share of a push that `me` takes against `other`.
fn share(me: Role, other: Role, crowd: &CrowdSettings) -> f32 {
    match (me, other) {
        (Role::Anchored | Role::WalkingThrough | Role::Driving, _) => 0.0,
        // Infantry standing round a vehicle standing share the push with it, as two vehicles
        // standing do: anchored, it kept the crowd settling round it pressed into itself. One on
        // its way goes round it (shoving it, a stream of them bulldozed a parked tank along).
        (Role::Parked, Role::Parked | Role::Standing) | (Role::Standing, Role::Parked) => 0.5,
        (Role::Parked, Role::Underway) => 0.0,
        (Role::Underway, Role::Parked) => 1.0,
        (_, Role::Anchored | Role::WalkingThrough | Role::Driving) => 1.0,
        (Role::Standing, Role::Underway) => crowd.push_strength,
        (Role::Underway, Role::Standing) => 1.0 - crowd.push_strength,
        _ => 0.5,
    }
}

/// The units [`push_apart`] pushes.
type Pushed<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static NavAgent,
        Option<&'static ClassId>,
        &'static mut Transform,
        &'static mut PathProgress,
        Option<&'static mut DesiredVelocity>,
        Has<HoldPosition>,
        Has<Vehicle>,
    ),
    With<Mover>,
>;

/// A unit moved since the last frame's pushes: walked, moved by the game, or given a new
/// velocity by its controller.
type Moved = Or<(Changed<Transform>, Changed<DesiredVelocity>)>;

/// One unit [`push_apart`] indexes.
type PushedItem<'a> = (
    Entity,
    &'a NavAgent,
    Option<&'a ClassId>,
    Mut<'a, Transform>,
    Mut<'a, PathProgress>,
    Option<Mut<'a, DesiredVelocity>>,
    bool,
    bool,
);

/// Pushes overlapping units apart (see the module docs); off with
/// [`CrowdSettings::pushing`].
pub(crate) fn push_apart(
    time: Res<Time>,
    settings: Res<TilepathSettings>,
    maps: Query<(Entity, &'static NavMap)>,
    mut bodies: ParamSet<(Pushed, Query<(), (With<Mover>, Moved)>)>,
    mut index: Local<PushIndex>,
    mut roles: Local<Vec<Role>>,
    mut entering: Local<Vec<Option<Entering>>>,
    mut pushed_before: Local<EntityHashSet>,
    order: Res<MoverOrder>,
    mut stats: ResMut<MovementFrameStats>,
) {
    let watch = Stopwatch::start();
    let crowd = &settings.crowd;
    // Pushing off; or no body moved since the last frame's pushes and none was pushed then: no
    // pair can have come to overlap, and the passes would find nothing. An army standing still
    // costs a look at its change ticks, not an index of every body.
    if !crowd.pushing || pushed_before.is_empty() && bodies.p1().is_empty() {
        let (wall, cpu) = watch.stop();
        stats.push = wall;
        stats.cpu += cpu;
        return;
    }
    let mut units = bodies.p0();
    let index = &mut index.0;
    index.clear();
    roles.clear();
    entering.clear();
    // Only a body that moved since the last frame's pushes (walked, was moved by the game, or
    // was pushed then) can have come to overlap another: the first pass starts from those.
    let mut active = Vec::new();
    let mut indexed = Indexed {
        maps: &maps,
        index,
        roles: &mut roles,
        entering: &mut entering,
        active: &mut active,
        pushed_before: &pushed_before,
    };
    indexed.add_all(
        &mut units,
        settings.lockstep.is_some().then_some(&order.0[..]),
    );
    index.build(|map| {
        maps.get(map)
            .ok()
            .map(|(_, m)| m.grid().extent().ceil().as_uvec2())
    });
    let max_step = crowd.push_speed * time.delta_secs();
    let grid = |map: Entity, class: ClassId| {
        let nav = maps.get(map).ok()?.1;
        Some((nav.grid_of(class), nav.footprint_of(class)))
    };
    // Bevy gives the compute pool what is left of the cores after one I/O and one async
    // compute thread: one thread on 2 cores, where handing work to it gains nothing.
    let pool = ComputeTaskPool::try_get()
        .map(|pool| &**pool)
        .filter(|pool| pool.thread_num() > 1);
    let bodies = (&roles[..], &entering[..]);
    pushed_before.clear();
    if max_step <= 0.0 {
        // A frame without time (the app's first, or the game's clock paused) moves nobody: the
        // bodies it would have looked at are looked at in the next one with time (units
        // spawned into each other at start-up were otherwise never looked at again).
        pushed_before.extend(active.iter().map(|&i| index.members()[i].entity));
    } else {
        for i in push(index, bodies, active, crowd, max_step, grid, pool) {
            let m = index.members()[i];
            if let (Ok((_, nav)), Ok(unit)) = (maps.get(m.map), units.get_mut(m.entity)) {
                pushed_before.insert(m.entity);
                moved_by_push(m, nav, unit, time.delta_secs());
            }
        }
    }
    let (wall, cpu) = watch.stop();
    stats.push = wall;
    stats.cpu += cpu;
}

/// Side of the squares [`push_apart`] indexes bodies by, in cells: a body's pairs reach about two
/// radii (0.7 tiles for the default body), so a look-up reads 2 x 2 to 3 x 3 squares; in a dense
/// crowd (one or two bodies a cell) squares of 2 cells hold 4-8 bodies, where squares of 4 (the
/// avoidance index's) held 16-32, and a battle's push cost grew with their square.
const PUSH_SQUARE: f32 = 2.0;

/// The bodies [`push_apart`] pushes, by squares of [`PUSH_SQUARE`] cells.
pub(crate) struct PushIndex(Neighbours);

impl Default for PushIndex {
    fn default() -> Self {
        PushIndex(Neighbours::with_square(PUSH_SQUARE))
    }
}

/// What [`push_apart`] gathers of the units before pushing: their bodies indexed by cell, their
/// roles, who jostles at a gate, and which moved since the last frame's pushes.
struct Indexed<'a, 'w, 's> {
    maps: &'a Query<'w, 's, (Entity, &'static NavMap)>,
    index: &'a mut Neighbours,
    roles: &'a mut Vec<Role>,
    entering: &'a mut Vec<Option<Entering>>,
    active: &'a mut Vec<usize>,
    pushed_before: &'a EntityHashSet,
}

impl Indexed<'_, '_, '_> {
    /// Adds every unit; with `order`, in that order (the units' lockstep order: who pushes whom
    /// first decides where bodies end).
    fn add_all(&mut self, units: &mut Pushed, order: Option<&[Entity]>) {
        match order {
            Some(order) => {
                let mut iter = units.iter_many_mut(order);
                while let Some(item) = iter.fetch_next() {
                    self.add(item);
                }
            }
            None => {
                for item in units {
                    self.add(item);
                }
            }
        }
    }

    /// Adds one unit.
    fn add(
        &mut self,
        (entity, agent, class, transform, progress, desired, holds, vehicle): PushedItem,
    ) {
        let maps = self.maps;
        // A unit that never had a path stands on the map under it.
        let at = transform.translation.truncate();
        let Some((map, nav)) = progress
            .map
            .and_then(|m| maps.get(m).ok())
            .or_else(|| maps.iter().find(|(_, nav)| nav.world_to_cell(at).is_some()))
        else {
            return;
        };
        let here = nav.world_to_grid(at);
        let class = ClassId::of(class);
        self.index.add(Member {
            entity,
            map,
            class,
            body: Body {
                // A unit whose controller moves it: where this frame's step is to take it.
                position: desired.as_ref().map_or(here, |d| d.expected_or(here)),
                // Which way a unit on its way faces (the side a standing unit is shoved to).
                velocity: progress.heading,
                radius: agent.radius,
            },
        });
        let role = match Role::of(progress.state, progress.patient) {
            _ if vehicle && progress.state == MoveState::Moving => Role::Driving,
            Role::Standing if holds => Role::Anchored,
            _ if vehicle => Role::Parked,
            role => role,
        };
        let moved = transform.is_changed() || desired.is_some_and(|d| d.is_changed());
        if moved || self.pushed_before.contains(&entity) {
            self.active.push(self.roles.len());
        }
        let grid = nav.grid_of(class);
        self.entering.push(
            progress
                .next
                .filter(|&gate| {
                    role == Role::Underway
                        && progress.stalled > GATE_JOSTLE
                        && grid.is_one_wide(gate)
                        && grid.cell_at(here) != gate
                })
                .map(|gate| Entering {
                    gate,
                    to_centre: grid.cell_center(gate) - here,
                }),
        );
        self.roles.push(role);
    }
}

/// A unit its body pushed to `m`'s position: moved there (or, with a controller, the push added
/// to the velocity it wants), and off the curve it walks by an offset that fades as it walks on.
fn moved_by_push(m: Member, nav: &NavMap, unit: PushedItem, dt: f32) {
    let (_, _, _, mut transform, mut progress, desired, ..) = unit;
    let at = nav.world_to_grid(transform.translation.truncate());
    let shift = match desired {
        // Its controller moves it: the push joins the velocity it wants.
        Some(mut d) => {
            let shift = m.body.position - d.expected_or(at);
            d.pushed(nav, shift, dt);
            shift
        }
        None => {
            let z = transform.translation.z;
            transform.translation = nav.grid_to_world(m.body.position).extend(z);
            m.body.position - at
        }
    };
    if progress.leg.is_some() {
        progress.offset += shift;
    }
}

/// Pushes the indexed bodies apart ([`PASSES`] passes, the later ones only for deep overlaps,
/// each body moving at most `max_step` tiles a pass, never onto blocked cells of its map's
/// grid; two bodies jostling at a gate as [`first_into_gate`] says); returns the indices of the
/// bodies moved. The first pass looks at the pairs of the bodies in `active` (those that moved since
/// they were last apart), the next ones at the pairs of the bodies the pass before moved (no
/// other pair can have come closer). With a `pool`, the work of a pass with many bodies is
/// spread over its threads, with the same result.
fn push<'g>(
    index: &mut Neighbours,
    (roles, entering): (&[Role], &[Option<Entering>]),
    mut active: Vec<usize>,
    crowd: &CrowdSettings,
    max_step: f32,
    grid: impl Fn(Entity, ClassId) -> Option<(&'g NavGrid, u8)> + Sync,
    pool: Option<&TaskPool>,
) -> Vec<usize> {
    let count = index.members().len();
    let max_radius = index
        .members()
        .iter()
        .map(|m| m.body.radius)
        .fold(0.0f32, f32::max);
    let mut frame = Pushes {
        pushed: vec![0.0f32; count],
        shift: vec![Vec2::ZERO; count],
        is_active: vec![false; count],
        touched: Vec::new(),
        pool,
    };
    for pass in 0..PASSES {
        let (slack, min_push) = if pass < FULL_PASSES {
            (0.0, 0.0)
        } else {
            (DEEP, MIN_PUSH)
        };
        for &i in &active {
            frame.is_active[i] = true;
        }
        let pairs = Pairs {
            // The first pass's active bodies are all that walked, mostly clear of the others
            // in a crowd on its way: each costs a few look-ups, too little to hand off (split
            // over the pool, a sparse crowd's pushes took longer). Later passes' bodies were
            // all pushed, in contact with others: a melee's.
            pool: pool.filter(|_| pass > 0),
            index: &*index,
            roles,
            entering,
            crowd,
            slack,
            max_radius,
            is_active: &frame.is_active,
        };
        let pushes = pairs.of_all(&active);
        for &i in &active {
            frame.is_active[i] = false;
        }
        frame.add(pushes);
        active.clear();
        frame.move_touched(index, roles, (max_step, min_push), &grid, &mut active);
        if active.is_empty() {
            break;
        }
    }
    // A body whose pushes all came to nothing (too small to change a coordinate, or there and
    // back) did not move: it is not written, and does not keep pushing next frame. Two standing
    // bodies pressed together by a hair were pushed by a millionth of a tile every frame for
    // good, and kept the whole army indexed.
    (0..count).filter(|&i| frame.pushed[i] > 0.0).collect()
}

/// The pushes of one frame in progress (see [`push`]), by body index.
struct Pushes<'p> {
    /// How far each body was pushed this frame so far (at most MAX_FRAME_STEPS x max_step;
    /// above 0: it moved).
    pushed: Vec<f32>,
    /// This pass's push of each body so far.
    shift: Vec<Vec2>,
    /// In this pass's active list.
    is_active: Vec<bool>,
    /// Bodies with a push this pass.
    touched: Vec<usize>,
    /// The pool to find pushed bodies' destinations on, if any.
    pool: Option<&'p TaskPool>,
}

/// What a pass reads to find its pushes: the bodies as the pass found them, who is active,
/// and how overlapping pairs part (see [`push`]).
struct Pairs<'a> {
    index: &'a Neighbours,
    roles: &'a [Role],
    entering: &'a [Option<Entering>],
    crowd: &'a CrowdSettings,
    /// Pairs overlapping by this share of their radii or less are left alone.
    slack: f32,
    /// The largest body's radius: the reach of a body's pairs.
    max_radius: f32,
    /// In this pass's active list.
    is_active: &'a [bool],
    /// The pool to find the pass's pairs on, if any.
    pool: Option<&'a TaskPool>,
}

/// One body's share of one pair's push: the body's index and the shift.
type Push = (u32, Vec2);

impl Pairs<'_> {
    /// The pushes of the pairs of every body in `active`, in the order one pass over `active`
    /// finds them. Read from the bodies as they stand, so a crowd's share of them is found on
    /// the compute task pool's threads, a chunk of `active` each, and handed back in order:
    /// the shifts add up in one order whatever the threads, and are the same bits.
    fn of_all(&self, active: &[usize]) -> Vec<Push> {
        let chunk = |chunk: &[usize]| {
            let mut out = Vec::new();
            for &i in chunk {
                self.of_one(i, &mut out);
            }
            out
        };
        match spread_over(self.pool, active.len()) {
            Some(pool) => active
                .par_chunk_map(pool, PARALLEL_CHUNK, |_, c| chunk(c))
                .concat(),
            _ => chunk(active),
        }
    }

    /// Adds to `out` the pushes between active body `i` and the bodies it overlaps by more than
    /// `slack` of their radii (each pair once).
    fn of_one(&self, i: usize, out: &mut Vec<Push>) {
        let (index, roles) = (self.index, self.roles);
        let me = index.members()[i];
        let reach = me.body.radius + self.max_radius;
        let slack = self.slack;
        let mut near = [0u8; SCAN_CHUNK];
        for chunk in index
            .rows_near(me.map, me.body.position, reach)
            .flat_map(|r| r.chunks(SCAN_CHUNK))
        {
            // The bodies of the chunk not clearly apart (by a margin above rounding), found
            // without a branch each: in a crowd most are apart, and a branch on each was a
            // guess the processor often missed. The tests below decide the rest.
            let mut found = 0;
            for (k, n) in chunk.iter().enumerate() {
                let gap = n.position - me.body.position;
                let contact = (me.body.radius + n.radius) * (1.0 - slack);
                let apart = gap.length_squared() > contact * contact * APART_MARGIN;
                near[found] = k as u8;
                found += usize::from(!apart);
            }
            for &k in &near[..found] {
                let n = &chunk[k as usize];
                let gap = n.position - me.body.position;
                let j = n.index as usize;
                // Each pair once: from its active end, or its lower one if both are active.
                if j == i
                    || roles[i] == Role::WalkingThrough && roles[j] == Role::WalkingThrough
                    || self.is_active[j] && j < i
                {
                    continue;
                }
                let overlap = me.body.radius + n.radius - gap.length();
                if overlap <= slack * (me.body.radius + n.radius) {
                    continue;
                }
                self.pair((i, j), gap, overlap, out);
            }
        }
    }

    /// Adds to `out` the pushes that part bodies `i` and `j`, `gap` apart (from `i` to `j`) and
    /// overlapping by `overlap`.
    fn pair(&self, (i, j): (usize, usize), gap: Vec2, overlap: f32, out: &mut Vec<Push>) {
        let (index, roles) = (self.index, self.roles);
        let (me, other) = (index.members()[i], index.members()[j].body);
        // Bodies on the same spot part along a direction of their own.
        let away = gap
            .try_normalize()
            .unwrap_or_else(|| fmath::unit_at(i as f32 * std::f32::consts::GOLDEN_RATIO * 2.0));
        // Two units on their way meeting head-on part sideways, each to its right if
        // neither is to the side yet, so they pass instead of pressing each other back.
        let away = if roles[i] == Role::Underway && roles[j] == Role::Underway {
            passing(away, me.body.velocity, other.velocity)
        } else {
            away
        };
        let first = first_into_gate(i, j, self.entering);
        for (k, sign, mine, theirs, pusher) in [
            (i, -1.0, roles[i], roles[j], j),
            (j, 1.0, roles[j], roles[i], i),
        ] {
            let dir = if mine == Role::Standing && theirs == Role::Underway
                || mine != Role::WalkingThrough && theirs == Role::WalkingThrough
                || mine != Role::Driving && theirs == Role::Driving
            {
                aside(sign * away, index.members()[pusher].body.velocity)
            } else {
                sign * away
            };
            let part = match first {
                Some(f) if f == k => 0.0,
                Some(_) => 1.0,
                None => share(mine, theirs, self.crowd),
            };
            out.push((k as u32, dir * overlap * part));
        }
    }
}

impl Pushes<'_> {
    /// Adds a pass's pushes to the bodies' shifts, in the order found.
    fn add(&mut self, pushes: Vec<Push>) {
        for (k, shift) in pushes {
            let k = k as usize;
            if self.shift[k] == Vec2::ZERO {
                self.touched.push(k);
            }
            self.shift[k] += shift;
        }
    }

    /// Moves the bodies pushed this pass (at most `max_step`, a push shorter than `min_push`
    /// not at all), within their frame's budget and never onto a blocked cell of their class's
    /// grid; the bodies moved go into `active`. Where each goes depends on its own push and
    /// the walls alone, so the destinations are found on the compute task pool (as the pairs
    /// are) and the bodies moved in the order they were pushed.
    fn move_touched<'g>(
        &mut self,
        index: &mut Neighbours,
        roles: &[Role],
        (max_step, min_push): (f32, f32),
        grid: &(impl Fn(Entity, ClassId) -> Option<(&'g NavGrid, u8)> + Sync),
        active: &mut Vec<usize>,
    ) {
        let mut pushed = Vec::with_capacity(self.touched.len());
        for &i in &self.touched {
            let s = std::mem::take(&mut self.shift[i]);
            if s == Vec2::ZERO {
                continue;
            }
            let budget = (MAX_FRAME_STEPS * max_step - self.pushed[i]).min(max_step);
            if budget <= 1e-6 {
                continue;
            }
            let s = s.clamp_length_max(budget);
            if s.length_squared() >= min_push * min_push {
                pushed.push((i, s));
            }
        }
        self.touched.clear();
        let bodies: &Neighbours = index;
        let to = |&(i, s): &(usize, Vec2)| destination(bodies.members()[i], roles[i], s, grid);
        let found: Vec<Option<Vec2>> = match spread_over(self.pool, pushed.len()) {
            Some(pool) => pushed
                .par_chunk_map(pool, PARALLEL_CHUNK, |_, c| {
                    c.iter().map(to).collect::<Vec<_>>()
                })
                .concat(),
            _ => pushed.iter().map(to).collect(),
        };
        for ((i, _), to) in pushed.into_iter().zip(found) {
            let Some(to) = to else { continue };
            let p = index.members()[i].body.position;
            index.move_body(i, to);
            self.pushed[i] += to.distance(p);
            active.push(i);
        }
    }
}

/// `pool`, if `count` bodies are enough to spread over it (two chunks or more).
fn spread_over(pool: Option<&TaskPool>, count: usize) -> Option<&TaskPool> {
    pool.filter(|_| count >= 2 * PARALLEL_CHUNK)
}

/// Where body `m` (taking part as `role`) goes pushed by `s`: the whole push, else sliding along
/// the wall on one axis (never back along a unit's own way: pressed between a wall and a unit
/// crossing its way, it would be slid back as far as it walks, and the two would stand locked),
/// else nowhere. Tested against its class's grid, whose walls are grown by its footprint.
fn destination<'g>(
    m: Member,
    role: Role,
    s: Vec2,
    grid: &impl Fn(Entity, ClassId) -> Option<(&'g NavGrid, u8)>,
) -> Option<Vec2> {
    let (grid, footprint) = grid(m.map, m.class)?;
    let p = m.body.position;
    let radius = wall_radius(grid, m.body.radius, footprint);
    let clear = |q: Vec2| !overlaps_blocked(grid, q, radius);
    let heading = m.body.velocity;
    let slide = |q: Vec2| role != Role::Underway || (q - p).dot(heading) >= 0.0;
    [p + s, p + Vec2::new(s.x, 0.0), p + Vec2::new(0.0, s.y)]
        .into_iter()
        .enumerate()
        .find(|&(k, q)| (k == 0 || slide(q)) && clear(q))
        .map(|(_, q)| q)
}

/// How two units on their way facing `mine` and `theirs`, the other one lying `away` from this
/// one, part: sideways if they meet head-on (see [`push`]), else straight apart.
fn passing(away: Vec2, mine: Vec2, theirs: Vec2) -> Vec2 {
    let (Some(h), Some(t)) = (mine.try_normalize(), theirs.try_normalize()) else {
        return away;
    };
    if h.dot(t) > -HEAD_ON {
        return away;
    }
    let axis = (h - t).normalize_or(h);
    let side = away - axis * away.dot(axis);
    // Nearly in line: the other passes on this one's left (each keeps right).
    let side = if side.length() < IN_LINE {
        axis.perp()
    } else {
        side.normalize()
    };
    (side + away * ALONG).normalize_or(side)
}

/// The way a standing unit is shoved by a unit on its way facing `heading`, when pushing
/// straight would send it `away`: out of the mover's way to the side it stands on (the left one
/// if dead ahead), never along the mover's way, where it would be shoved ahead of it all along
/// its path. A wall in that way turns the push into a slide along it.
fn aside(away: Vec2, heading: Vec2) -> Vec2 {
    let Some(h) = heading.try_normalize() else {
        return away;
    };
    let ahead = away.dot(h);
    if ahead <= 0.0 {
        return away;
    }
    let side = away - h * ahead;
    let side = side.try_normalize().unwrap_or(h.perp());
    (side + away * 0.5).normalize_or(side)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Cell;

    fn member(n: u32, x: f32, y: f32) -> Member {
        Member {
            entity: Entity::from_raw_u32(n).unwrap(),
            map: Entity::from_raw_u32(1).unwrap(),
            class: ClassId::DEFAULT,
            body: Body {
                position: Vec2::new(x, y),
                velocity: Vec2::ZERO,
                radius: 0.35,
            },
        }
    }

    fn index(grid: &NavGrid, members: &[Member]) -> Neighbours {
        let mut n = Neighbours::default();
        for &m in members {
            n.add(m);
        }
        n.build(|_| Some(UVec2::new(grid.width(), grid.height())));
        n
    }

    /// [`push`] with every body active and every map `grid` (no footprints), pushes at most
    /// `max_step` tiles a pass.
    fn push_on(
        grid: &NavGrid,
        n: &mut Neighbours,
        roles: &[Role],
        entering: &[Option<Entering>],
        max_step: f32,
    ) -> Vec<usize> {
        let active = (0..roles.len()).collect();
        let crowd = CrowdSettings::default();
        push(
            n,
            (roles, entering),
            active,
            &crowd,
            max_step,
            |_, _| Some((grid, 0)),
            None,
        )
    }

    /// Two standing bodies pressed together by less than their coordinates can tell apart are
    /// pushed, but do not move, and are not reported moved: else they were written and pushed
    /// again every frame, for good.
    #[test]
    fn pushes_too_small_to_move_a_body_move_nothing() {
        let grid = NavGrid::new(600, 600).unwrap();
        // Their radii's sum (0.7) apart less a hair, far from the origin, where a coordinate
        // steps by 3e-5: the next number below 376.2.
        let hair = f32::from_bits(376.2f32.to_bits() - 1);
        let (a, b) = (member(2, 495.5, 375.5), member(3, 495.5, hair));
        let mut n = index(&grid, &[a, b]);
        let roles = [Role::Standing, Role::Standing];
        assert!(push_on(&grid, &mut n, &roles, &[None, None], 0.1).is_empty());
        // Pressed together by more, they part, and are reported moved.
        let (a, b) = (member(2, 495.5, 375.5), member(3, 495.5, 376.0));
        let mut n = index(&grid, &[a, b]);
        assert_eq!(
            push_on(&grid, &mut n, &roles, &[None, None], 0.1),
            vec![0, 1]
        );
    }

    #[test]
    fn a_melee_pushed_on_a_pool_of_threads_ends_on_the_same_bits() {
        // A melee: 3,000 bodies of mixed roles packed into 40 x 40 cells across a wall with
        // gaps, nearly two a cell, so every pass has thousands of bodies to spread.
        let mut grid = NavGrid::new(48, 48).unwrap();
        for k in 4..44 {
            grid.set_walkable(Cell::new(k, 24), k % 7 == 0).unwrap();
        }
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut members = Vec::new();
        let mut roles = Vec::new();
        let mut entering = Vec::new();
        for n in 0..3000u32 {
            let mut m = member(n + 2, 4.0 + 40.0 * next(), 4.0 + 40.0 * next());
            m.body.velocity = Vec2::new(next() - 0.5, next() - 0.5);
            members.push(m);
            roles.push(match n % 5 {
                0 => Role::Standing,
                1 => Role::WalkingThrough,
                _ => Role::Underway,
            });
            entering.push((n % 11 == 0).then(|| Entering {
                gate: Cell::new(7, 24),
                to_centre: Vec2::new(next(), 1.0),
            }));
        }
        let crowd = CrowdSettings::default();
        let pool = bevy::tasks::TaskPoolBuilder::new().num_threads(2).build();
        let run = |pool: Option<&TaskPool>| {
            let mut n = index(&grid, &members);
            let active = (0..members.len()).collect();
            let bodies = (&roles[..], &entering[..]);
            let moved = push(
                &mut n,
                bodies,
                active,
                &crowd,
                0.1,
                |_, _| Some((&grid, 0)),
                pool,
            );
            let at: Vec<[u32; 2]> = n
                .members()
                .iter()
                .map(|m| [m.body.position.x.to_bits(), m.body.position.y.to_bits()])
                .collect();
            (moved, at)
        };
        let (alone, spread) = (run(None), run(Some(&pool)));
        assert!(alone.0.len() > 2000, "a melee: {} moved", alone.0.len());
        let elsewhere = (alone.1.iter().zip(&spread.1))
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(elsewhere, 0, "bodies ending elsewhere on the pool");
        assert!(alone.0 == spread.0, "other bodies moved on the pool");
    }

    #[test]
    fn a_unit_on_its_way_pushes_a_standing_one_aside() {
        let grid = NavGrid::new(8, 8).unwrap();
        let mut n = index(&grid, &[member(2, 3.5, 3.5), member(3, 3.9, 3.5)]);
        let roles = [Role::Underway, Role::Standing];
        let moved = push_on(&grid, &mut n, &roles, &[None, None], 1.0);
        assert_eq!(moved, vec![0, 1]);
        let (a, b) = (n.members()[0].body.position, n.members()[1].body.position);
        assert!(a.distance(b) >= 0.7 - 1e-3, "pushed apart: {a} {b}");
        // The standing unit took most of the push.
        assert!((b.x - 3.9) > 3.0 * (3.5 - a.x), "{a} {b}");
    }

    #[test]
    fn a_parked_vehicle_gives_way_to_vehicles_and_shares_with_infantry_standing() {
        let grid = NavGrid::new(8, 8).unwrap();
        let run = |roles: [Role; 2]| {
            let mut n = index(&grid, &[member(2, 3.5, 3.5), member(3, 3.9, 3.5)]);
            push_on(&grid, &mut n, &roles, &[None, None], 1.0);
            (n.members()[0].body.position, n.members()[1].body.position)
        };
        // A vehicle driving into a parked one: the parked one slides out of its way.
        let (a, b) = run([Role::Driving, Role::Parked]);
        assert_eq!(a, Vec2::new(3.5, 3.5), "the driving vehicle was pushed");
        assert!(a.distance(b) >= 0.7 - 1e-3, "pushed apart: {a} {b}");
        // Two parked vehicles part, each taking half.
        let (a, b) = run([Role::Parked, Role::Parked]);
        assert!(a.distance(b) >= 0.7 - 1e-3, "pushed apart: {a} {b}");
        assert!(((3.5 - a.x) - (b.x - 3.9)).abs() < 1e-3, "{a} {b}");
        // A unit standing and a parked vehicle share the push.
        let (a, b) = run([Role::Standing, Role::Parked]);
        assert!(a.distance(b) >= 0.7 - 1e-3, "pushed apart: {a} {b}");
        assert!(((3.5 - a.x) - (b.x - 3.9)).abs() < 1e-3, "{a} {b}");
        // A unit on its way does not move it: it takes the push.
        let (a, b) = run([Role::Underway, Role::Parked]);
        assert_eq!(b, Vec2::new(3.9, 3.5), "the parked vehicle was pushed");
        assert!(a.distance(b) >= 0.7 - 1e-3, "pushed apart: {a} {b}");
        // A unit holding its position or walking through shoves it aside.
        for other in [Role::Anchored, Role::WalkingThrough] {
            let (a, b) = run([other, Role::Parked]);
            assert_eq!(a, Vec2::new(3.5, 3.5), "{other:?} was pushed");
            assert!(a.distance(b) >= 0.7 - 1e-3, "pushed apart: {a} {b}");
        }
    }

    #[test]
    fn pushes_never_move_a_body_onto_a_blocked_cell() {
        let mut grid = NavGrid::new(8, 8).unwrap();
        for y in 0..8 {
            grid.set_walkable(Cell::new(4, y), false).unwrap();
        }
        // A standing unit against the wall, pushed toward it from the left, and slid along it.
        let mut n = index(&grid, &[member(2, 3.2, 3.6), member(3, 3.64, 3.5)]);
        let roles = [Role::Underway, Role::Standing];
        for _ in 0..20 {
            push_on(&grid, &mut n, &roles, &[None, None], 0.1);
        }
        for m in n.members() {
            assert!(!overlaps_blocked(
                &grid,
                m.body.position,
                m.body.radius - 2e-3
            ));
        }
    }

    #[test]
    fn a_unit_walking_through_shoves_the_others_out_of_its_way() {
        let grid = NavGrid::new(8, 8).unwrap();
        // Walking east through a unit on its way just ahead and to its left, and a standing one.
        let mut through = member(2, 3.5, 3.5);
        through.body.velocity = Vec2::X;
        let mut n = index(&grid, &[through, member(3, 3.8, 3.6), member(4, 3.5, 3.9)]);
        let roles = [Role::WalkingThrough, Role::Underway, Role::Standing];
        for _ in 0..10 {
            push_on(&grid, &mut n, &roles, &[None, None, None], 0.1);
        }
        let [a, b, c] = [0, 1, 2].map(|i| n.members()[i].body.position);
        assert_eq!(
            a,
            Vec2::new(3.5, 3.5),
            "the one walking through is not pushed"
        );
        assert!(
            a.distance(b) >= 0.7 - 1e-3 && a.distance(c) >= 0.7 - 1e-3,
            "{a} {b} {c}"
        );
        // Shoved aside, not ahead along its way.
        assert!(b.y - 3.6 > b.x - 3.8, "{b}");
        // Two walking through leave each other alone.
        let mut n = index(&grid, &[member(2, 3.5, 3.5), member(3, 3.6, 3.5)]);
        let roles = [Role::WalkingThrough, Role::WalkingThrough];
        assert!(push_on(&grid, &mut n, &roles, &[None, None], 1.0).is_empty());
    }

    #[test]
    fn of_two_units_jostling_at_a_gate_the_nearer_goes_first() {
        // A wall at x = 4 with a gate at (4, 3); two bodies side by side before it, both
        // going into it, the upper one a little nearer.
        let mut grid = NavGrid::new(8, 8).unwrap();
        for y in (0..8).filter(|&y| y != 3) {
            grid.set_walkable(Cell::new(4, y), false).unwrap();
        }
        let gate = Cell::new(4, 3);
        assert!(grid.is_one_wide(gate));
        let (a, b) = (Vec2::new(3.6, 3.25), Vec2::new(3.62, 3.8));
        let at_gate = |p: Vec2| {
            Some(Entering {
                gate,
                to_centre: grid.cell_center(gate) - p,
            })
        };
        let roles = [Role::Underway, Role::Underway];
        let run = |entering: [Option<Entering>; 2]| {
            let mut n = index(&grid, &[member(2, a.x, a.y), member(3, b.x, b.y)]);
            push_on(&grid, &mut n, &roles, &entering, 1.0);
            (n.members()[0].body.position, n.members()[1].body.position)
        };
        // Jostling at the gate: the nearer stays, the other takes the whole push.
        let (p, q) = run([at_gate(a), at_gate(b)]);
        assert_eq!(q, b, "the nearer one was pushed");
        assert!(p.distance(q) >= 0.7 - 1e-3, "pushed apart: {p} {q}");
        // Otherwise (not jostling yet, or at the gate from its two sides) they share it.
        for entering in [
            [None, at_gate(b)],
            [at_gate(a), at_gate(Vec2::new(4.8, 3.8))],
        ] {
            let (p, q) = run(entering);
            assert!(p != a && q != b, "{p} {q}");
        }
    }
}
