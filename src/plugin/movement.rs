//! Movement: units walk their [`Path`]'s smoothed waypoints at speed x delta time, curve through
//! turns with a turning radius (Pinter), claim the next few cells, and handle other units in the
//! way (Lester's notes 1 and 2).

use std::collections::VecDeque;

use bevy::prelude::*;

use crate::core::{Cell, NavGrid, TurnPlan, cell_at, cell_center, overlaps_blocked, walkable};

use super::claims::{Claims, Intent};
use super::components::{Path, PathGoal, PathRequest, PathStatus};
use super::map::NavMap;

/// Makes a unit follow its [`Path`]. Speeds, radii and distances are in tiles.
#[derive(Component, Clone, Debug, PartialEq)]
#[require(Transform, PathProgress)]
pub struct Mover {
    /// Tiles per second.
    pub speed: f32,
    /// Body radius in tiles (used by smoothing, turn checks and overlap checks).
    pub radius: f32,
    /// Turning radius in tiles; 0 turns in place (infantry). See [`PathProgress`] for the
    /// fallbacks when an arc is impossible or would touch a wall.
    pub turning_radius: f32,
    /// Distance to the final waypoint counted as arrived.
    pub arrival_tolerance: f32,
    /// How many cells ahead a moving unit claims.
    pub claim_ahead: usize,
    /// Seconds to wait for a moving unit in the way before repathing or yielding.
    pub wait_time: f32,
}

impl Default for Mover {
    fn default() -> Self {
        Mover {
            speed: 4.0,
            radius: 0.3,
            turning_radius: 0.0,
            arrival_tolerance: 0.05,
            claim_ahead: 3,
            wait_time: 0.4,
        }
    }
}

/// A unit kept from its path by other units for a while stops if its goal is within this many
/// tiles (Chebyshev): its group has gathered around the goal and it is at the edge of the crowd.
const CLOSE_ENOUGH: i32 = 16;

/// Times a unit steps aside for others before it stops yielding (streams meeting head-on on a
/// bridge would otherwise take turns stepping aside forever).
const MAX_YIELDS: u32 = 3;

/// Seconds a unit may spend waiting without getting a tile closer to its goal; after that it
/// walks through other units (never walls) until it is [`GHOST_FOR`] tiles on.
const GHOST_AFTER: f32 = 2.0;

/// Tiles a unit walks through other units once it has been kept in place for [`GHOST_AFTER`].
const GHOST_FOR: f32 = 3.0;

/// Repaths a unit kept in place tries before it just waits (and, after [`GHOST_AFTER`], walks
/// through).
const MAX_STUCK_REPATHS: u32 = 2;

/// How far (in steps) an idle unit looks for a free cell when asked to make way.
const MAKE_WAY_REACH: u32 = 6;

/// Priority of the short searches of units making way or stepping aside (ahead of orders).
const MAKE_WAY_PRIORITY: i32 = 10;

/// How many corridor cells ahead of the last one passed a unit's cell is looked for.
const TRACK_AHEAD: usize = 8;

/// What a mover is doing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum MoveState {
    /// No path to follow.
    #[default]
    Idle,
    /// Following its path.
    Moving,
    /// Waiting for a unit in the way, for this many seconds so far.
    Waiting(f32),
    /// Reached the end of its path.
    Arrived,
}

/// A mover's progress along its path (managed by the plugin).
///
/// Turning: from its position and heading the unit follows the shorter arc-then-line curve to
/// the next waypoint ([`TurnPlan`]). When the waypoint lies inside both turning circles or the arc
/// would touch a blocked cell, it falls back, in order, to half then a quarter of its turning
/// radius, then to turning in place; it slows to 70 %, 50 % and 35 % of its speed through those
/// tighter turns (Pinter's speed restriction). No three-point turns: units here are infantry-like.
#[derive(Component, Clone, Debug, Default)]
pub struct PathProgress {
    /// Index of the waypoint being walked to.
    pub waypoint: usize,
    /// Index of the next cell of the path's [`corridor`](Path::corridor) (cells before it are
    /// passed).
    pub cell_index: usize,
    /// Facing (grid space, normalised).
    pub heading: Vec2,
    /// What the unit is doing.
    pub state: MoveState,
    /// Current speed factor (below 1 in tight turns).
    pub speed_factor: f32,
    plan: Option<(TurnPlan, f32)>,
    /// The plan goes to the center of the unit's cell, not to the waypoint.
    detour: bool,
    claimed: VecDeque<Cell>,
    stopped_cell: Option<Cell>,
    moving_cell: Option<Cell>,
    /// The order to resume after stepping aside for another unit, and the cell stepped aside to.
    resume: Option<(PathRequest, Cell)>,
    /// Repaths since the unit last got a tile closer to its goal (capped: in a crowd, repeated
    /// repaths flip between routes instead of getting anywhere).
    stuck_repaths: u32,
    /// Seconds spent waiting since the unit last got a tile closer to its goal.
    blocked: f32,
    /// Where the unit started waiting (or walking through units).
    anchor: Vec2,
    /// The goal of the path it follows and the closest it has been to it.
    goal: Option<Cell>,
    closest: f32,
    /// The path's last waypoint (grid space) and the next corridor cell, kept so the path is
    /// read only when something changes.
    end: Vec2,
    next: Option<Cell>,
    /// What it last told [`Claims`] of where it is and goes (written only when it changes).
    intent: Option<Intent>,
    /// Walking through other units (after being kept in place too long).
    ghosting: bool,
    /// The cell it is stepping to, off its own, for a moving unit: no [`Arrived`] when it gets
    /// there.
    making_way: Option<Cell>,
    /// Times it stepped aside since it last reached a goal (it stops yielding after a few).
    yields: u32,
}

impl PathProgress {
    /// Cells this unit claims now.
    pub fn claimed(&self) -> impl Iterator<Item = Cell> + '_ {
        self.claimed.iter().copied()
    }
}

/// A unit reached the end of its path: a [`Message`] and an [`EntityEvent`].
#[derive(Message, EntityEvent, Clone, Copy, Debug, PartialEq)]
pub struct Arrived {
    /// The unit.
    pub entity: Entity,
    /// The cell it stopped on.
    pub cell: Cell,
}

/// Tells `claims` where the unit is and goes, if that changed since it last did.
fn publish_intent(
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

fn release_all(claims: &mut Claims, entity: Entity, progress: &mut PathProgress) {
    for c in progress.claimed.drain(..) {
        claims.release(c, entity);
    }
}

/// The nearest walkable cell around `from`, other than `from` (breadth-first, within
/// `max_steps`), that `ok` accepts.
fn nearest_cell(
    grid: &NavGrid,
    from: Cell,
    max_steps: u32,
    ok: impl Fn(Cell) -> bool,
) -> Option<Cell> {
    grid.cells_outward(from, max_steps).skip(1).find(|&c| ok(c))
}

fn plan_turn(
    grid: &NavGrid,
    mover: &Mover,
    pos: Vec2,
    heading: Vec2,
    target: Vec2,
) -> (TurnPlan, f32) {
    if mover.turning_radius > 0.0 {
        for (scale, speed) in [(1.0, 1.0), (0.5, 0.7), (0.25, 0.5)] {
            if let Some(plan) = TurnPlan::new(pos, heading, target, mover.turning_radius * scale) {
                // The arc, sampled finely with a margin for the distance between samples, then
                // the line, exactly.
                let arc = plan.arc_length();
                let n = (arc / 0.02).ceil() as u32;
                let arc_clear = arc < 1e-3
                    || (0..=n).all(|k| {
                        let p = plan.sample(arc * k as f32 / n as f32).0;
                        !overlaps_blocked(grid, p, mover.radius + 0.01)
                    });
                if arc_clear && walkable(grid, plan.tangent, plan.target, mover.radius) {
                    let speed = if plan.sweep.abs() < 0.05 { 1.0 } else { speed };
                    return (plan, speed);
                }
            }
        }
        return (TurnPlan::in_place(pos, target), 0.35);
    }
    (TurnPlan::in_place(pos, target), 1.0)
}

/// Follows paths: advances units, updates claims and occupancy, handles units in the way.
#[allow(clippy::too_many_arguments)]
pub(crate) fn move_units(
    time: Res<Time>,
    mut claims: ResMut<Claims>,
    maps: Query<&NavMap>,
    mut units: Query<(
        Entity,
        &Mover,
        &mut Transform,
        Ref<Path>,
        &mut PathProgress,
        &PathStatus,
        Option<&PathRequest>,
    )>,
    mut commands: Commands,
    mut arrived: MessageWriter<Arrived>,
) {
    let dt = time.delta_secs();
    for (entity, mover, mut transform, path, mut progress, status, request) in &mut units {
        let Ok(map) = maps.get(path.map) else {
            continue;
        };
        let grid = map.grid();
        let mut pos = map.world_to_grid(transform.translation.truncate());
        let progress = &mut *progress;
        if path.is_changed() {
            release_all(&mut claims, entity, progress);
            claims.set_stopped(entity, progress.stopped_cell.take(), None);
            progress.waypoint = 1;
            progress.cell_index = 1;
            progress.plan = None;
            progress.detour = false;
            progress.speed_factor = 1.0;
            // A one-waypoint path (the unit is there already) arrives below, with its message.
            progress.state = if path.waypoints.is_empty() {
                MoveState::Arrived
            } else {
                MoveState::Moving
            };
            // A new order given while the unit stepped aside or made way replaces those.
            if progress.making_way.is_some_and(|c| !heading_to(request, c)) {
                progress.making_way = None;
            }
            if progress
                .resume
                .as_ref()
                .is_some_and(|(_, aside)| !heading_to(request, *aside))
            {
                progress.resume = None;
            }
            if progress.heading == Vec2::ZERO {
                progress.heading = Vec2::X;
            }
        }
        if *status != PathStatus::Found && *status != PathStatus::Queued {
            // Failed or cancelled requests stop the unit where it is.
            if matches!(progress.state, MoveState::Moving | MoveState::Waiting(_)) {
                progress.state = MoveState::Idle;
                release_all(&mut claims, entity, progress);
            }
        }
        match progress.state {
            MoveState::Idle | MoveState::Arrived => {
                publish_intent(&mut claims, entity, progress, None);
                let here = cell_at(pos);
                if progress.stopped_cell != Some(here) {
                    claims.set_moving_at(entity, progress.moving_cell.take(), None);
                    claims.set_stopped(entity, progress.stopped_cell, Some(here));
                    progress.stopped_cell = Some(here);
                }
                // Asked to make way: step onto the nearest cell nobody stands on or claims (off
                // the asking unit's claimed cells) and stay there.
                if claims.take_make_way(entity).is_some()
                    && *status != PathStatus::Queued
                    && let Some(free) = nearest_cell(grid, here, MAKE_WAY_REACH, |c| {
                        claims.stopped_at(c).is_none()
                            && claims.moving_at(c).is_none()
                            && claims.claimants(c).is_empty()
                    })
                {
                    progress.making_way = Some(free);
                    commands
                        .entity(entity)
                        .insert(PathRequest::to_cell(free).with_priority(MAKE_WAY_PRIORITY));
                }
                continue;
            }
            MoveState::Moving | MoveState::Waiting(_) => {}
        }
        let cells = &path.corridor;
        let waypoint = |i: usize| map.world_to_grid(path.waypoints[i]);
        let waypoint_count = path.waypoints.len();
        if path.is_changed()
            && waypoint_count > 1
            && !walkable(grid, pos, waypoint(1), mover.radius)
        {
            // Smoothing assumed the start cell's center: go there first if the unit stands
            // elsewhere in it and cannot see the next waypoint.
            progress.waypoint = 0;
        }

        // Passed cells: the unit's cell, found a little ahead in its corridor, and every cell
        // before it. (Off the corridor, e.g. in a turn's arc, nothing is passed.)
        // (Only when the unit entered another cell or got a new path: with thousands of units,
        // reading each one's path every frame is what costs, in cache misses.)
        let here = cell_at(pos);
        let index_before = progress.cell_index;
        if path.is_changed() || progress.moving_cell != Some(here) {
            let from = progress.cell_index.saturating_sub(1);
            if let Some(k) = cells
                .iter()
                .skip(from)
                .take(TRACK_AHEAD + 1)
                .position(|&c| c == here)
            {
                progress.cell_index = from + k + 1;
            }
        }
        let retrack = path.is_changed() || progress.cell_index != index_before;
        if path.is_changed() {
            let goal_cell = *cells.last().expect("paths are never empty");
            progress.end = waypoint(waypoint_count - 1);
            if progress.goal != Some(goal_cell) {
                progress.goal = Some(goal_cell);
                progress.closest = pos.distance(cell_center(goal_cell));
            }
        }
        if retrack {
            progress.next = cells.get(progress.cell_index).copied();
        }
        let next_cell = progress.next;
        let goal_cell = progress.goal.expect("set with the path");
        // How far a unit walking through others has got.
        let moved = pos.distance(progress.anchor);
        // Progress is getting closer to the goal than ever before on this order: walking back
        // and forth between two routes in a crowd is not.
        let to_goal = pos.distance(cell_center(goal_cell));
        let closer = to_goal < progress.closest - 1.0;
        if closer {
            progress.closest = to_goal;
        }
        let next_taken = next_cell.is_some_and(|c| {
            claims.stopped_at(c).is_some_and(|e| e != entity)
                || claims.moving_at(c).is_some_and(|e| e != entity)
        });
        if closer && !progress.ghosting || progress.ghosting && moved >= GHOST_FOR && !next_taken {
            progress.anchor = pos;
            progress.blocked = 0.0;
            progress.stuck_repaths = 0;
            progress.ghosting = false;
        }
        // Claims: the current and next few cells, never the ones left behind.
        if retrack {
            let lo = progress.cell_index.saturating_sub(1);
            let hi = (progress.cell_index + mover.claim_ahead).min(cells.len());
            while progress
                .claimed
                .front()
                .is_some_and(|c| !cells[lo..hi].contains(c))
            {
                let c = progress.claimed.pop_front().expect("non-empty");
                claims.release(c, entity);
            }
            for &c in &cells[lo..hi] {
                if !progress.claimed.contains(&c) {
                    claims.claim(c, entity);
                    progress.claimed.push_back(c);
                }
            }
        }
        if progress.moving_cell != Some(here) {
            claims.set_moving_at(entity, progress.moving_cell, Some(here));
            progress.moving_cell = Some(here);
        }

        // Units in the way: the next cell of the path, if it is not ours already. A request
        // already in the queue is not sent again: the unit waits for its answer.
        let pending = *status != PathStatus::Found;
        let waited = match progress.state {
            MoveState::Waiting(w) => w,
            _ => 0.0,
        };
        if waited > 0.0 {
            if progress.blocked == 0.0 {
                progress.anchor = pos;
            }
            progress.blocked += dt;
        }
        publish_intent(
            &mut claims,
            entity,
            progress,
            Some(Intent {
                here,
                next: next_cell,
                waiting: waited > 0.0,
            }),
        );
        if let Some(next) = next_cell.filter(|&c| c != here)
            && claims.stopped_at(next).is_some_and(|e| e != entity)
        {
            // Close enough: a unit kept from the last few cells of its path by the units already
            // standing around its goal for a while stops where it is (its group has arrived).
            let near_goal = (goal_cell - here).abs().max_element() <= CLOSE_ENOUGH;
            let free_here = claims.stopped_at(here).is_none_or(|e| e == entity);
            if near_goal && free_here && progress.blocked > 4.0 * mover.wait_time {
                stop_here(
                    &mut claims,
                    entity,
                    progress,
                    here,
                    request,
                    &mut arrived,
                    &mut commands,
                );
                continue;
            }
        }
        // Last resort against gridlock: a unit kept in place for a long while walks through
        // other units (never through walls) for a few tiles.
        if progress.blocked > GHOST_AFTER && !progress.ghosting {
            progress.ghosting = true;
            progress.anchor = pos;
        }
        if let Some(next) = next_cell.filter(|&c| c != here && !progress.ghosting) {
            if claims.stopped_at(next).is_some_and(|e| e != entity) {
                // A stopped unit holds the next cell: repath around it (searches treat stopped
                // units as blocked), or, if it holds the goal, stop on the nearest free cell.
                // If going around was tried already (or the next cell is the only way, so the
                // repath came back through it), ask the unit to make way, as RTS units do.
                progress.state = MoveState::Waiting(waited + dt);
                if progress.stuck_repaths > 0
                    && next != goal_cell
                    && let Some(idle) = claims.stopped_at(next)
                {
                    claims.ask_to_make_way(idle, entity);
                }
                // Wait a moment first (it may be about to move), and between repaths.
                if !pending
                    && waited + dt > mover.wait_time
                    && progress.stuck_repaths < MAX_STUCK_REPATHS
                    && let Some(req) = request
                {
                    let mut req = req.clone();
                    if next == goal_cell {
                        match free_cell_near(grid, &claims, goal_cell) {
                            Some(free) => redirect(progress, &mut req, free),
                            None => {
                                progress.state = MoveState::Arrived;
                                continue;
                            }
                        }
                    }
                    progress.stuck_repaths += 1;
                    progress.state = MoveState::Waiting(dt);
                    commands.entity(entity).insert(req);
                }
                continue;
            }
            if let Some(other) = claims.moving_at(next).filter(|&e| e != entity) {
                let theirs = claims.intent(other);
                let head_on = theirs.is_some_and(|t| t.next == Some(here));
                let other_waits = theirs.is_some_and(|t| t.waiting);
                // A unit moving on ahead is no obstacle: it is leaving the cell.
                if head_on || other_waits {
                    let waited = waited + dt;
                    progress.state = MoveState::Waiting(waited);
                    if waited > mover.wait_time && !pending {
                        if head_on && entity > other && progress.yields < MAX_YIELDS {
                            // Break the tie by entity: this unit steps aside onto the nearest cell
                            // the other does not claim, then resumes its order.
                            let side = nearest_cell(grid, here, 16, |c| {
                                !claims.claimants(c).contains(&other)
                                    && claims.stopped_at(c).is_none()
                                    && claims.moving_at(c).is_none()
                            });
                            if let (Some(side), Some(req)) = (side, request) {
                                let original = match progress.resume.take() {
                                    Some((original, _)) => original,
                                    None => req.clone(),
                                };
                                progress.resume = Some((original, side));
                                progress.yields += 1;
                                commands.entity(entity).insert(
                                    PathRequest::to_cell(side).with_priority(MAKE_WAY_PRIORITY),
                                );
                                progress.state = MoveState::Waiting(dt);
                            }
                        } else if waited > 3.0 * mover.wait_time
                            && progress.stuck_repaths < MAX_STUCK_REPATHS
                            && let Some(req) = request
                        {
                            progress.stuck_repaths += 1;
                            commands.entity(entity).insert(req.clone());
                            progress.state = MoveState::Waiting(dt);
                        }
                    }
                    continue;
                }
            }
        }
        if matches!(progress.state, MoveState::Waiting(_)) {
            progress.state = MoveState::Moving;
        }

        // Advance along the waypoints.
        let mut distance = mover.speed * dt;
        let mut heading = progress.heading;
        while distance > 0.0 && progress.waypoint < waypoint_count {
            if progress.plan.is_none() {
                let target = waypoint(progress.waypoint);
                // Off its path (after an arc, making way, or a new path found elsewhere) the
                // straight line to the waypoint may clip a wall: step to the center of its own
                // cell first (always safe), and repath if even that line is blocked (or an edit
                // blocked the path's own segment).
                let on_path =
                    progress.waypoint > 0 && pos.distance(waypoint(progress.waypoint - 1)) < 1e-3;
                let radius = if on_path { 0.0 } else { mover.radius };
                if !walkable(grid, pos, target, radius) {
                    let center = cell_center(cell_at(pos));
                    if pos.distance(center) > 1e-3 {
                        progress.detour = true;
                        progress.speed_factor = 1.0;
                        progress.plan = Some((TurnPlan::in_place(pos, center), 0.0));
                    } else {
                        if !pending && let Some(req) = request {
                            commands.entity(entity).insert(req.clone());
                            progress.state = MoveState::Waiting(0.0);
                        }
                        break;
                    }
                } else {
                    let (plan, speed) = plan_turn(grid, mover, pos, heading, target);
                    progress.speed_factor = speed;
                    progress.plan = Some((plan, 0.0));
                }
            }
            let (plan, travelled) = progress.plan.as_mut().expect("planned");
            let step = (distance * progress.speed_factor).min(plan.length() - *travelled);
            *travelled += step.max(0.0);
            let (p, h) = plan.sample(*travelled);
            pos = p;
            if h != Vec2::ZERO {
                heading = h;
            }
            distance -= step.max(1e-6) / progress.speed_factor.max(1e-3);
            if *travelled >= plan.length() - 1e-4 {
                progress.plan = None;
                if !std::mem::take(&mut progress.detour) {
                    progress.waypoint += 1;
                }
            }
        }
        progress.heading = heading;
        transform.translation = map.grid_to_world(pos).extend(transform.translation.z);
        transform.rotation = Quat::from_rotation_z(heading.y.atan2(heading.x));

        let end = progress.end;
        if progress.waypoint >= waypoint_count || pos.distance(end) <= mover.arrival_tolerance {
            let cell = cell_at(pos);
            // Another unit got here first: take the nearest free cell instead of stacking.
            if claims.stopped_at(cell).is_some_and(|e| e != entity)
                && !pending
                && let Some(req) = request
                && let Some(free) = free_cell_near(grid, &claims, cell)
            {
                let mut req = req.clone();
                redirect(progress, &mut req, free);
                progress.state = MoveState::Waiting(dt);
                commands.entity(entity).insert(req);
                continue;
            }
            stop_here(
                &mut claims,
                entity,
                progress,
                cell,
                request,
                &mut arrived,
                &mut commands,
            );
        }
    }
}

/// Whether `request` is an order to go to `cell` (a step-aside or make-way trip).
fn heading_to(request: Option<&PathRequest>, cell: Cell) -> bool {
    request.is_some_and(|r| r.goal == PathGoal::Cell(cell))
}

/// The nearest cell around `cell` that no unit stands on or claims: where a unit whose goal is
/// taken goes instead.
fn free_cell_near(grid: &NavGrid, claims: &Claims, cell: Cell) -> Option<Cell> {
    nearest_cell(grid, cell, 12, |c| {
        claims.stopped_at(c).is_none() && claims.claimants(c).is_empty()
    })
}

/// Sends `request` to `free` instead of its goal (taken by a stopped unit); a unit stepping aside
/// keeps the order it will resume.
fn redirect(progress: &mut PathProgress, request: &mut PathRequest, free: Cell) {
    if let Some((_, aside)) = progress.resume.as_mut()
        && heading_to(Some(request), *aside)
    {
        *aside = free;
    }
    request.goal = PathGoal::Cell(free);
}

/// The unit stops on `cell`: claims released, the cell occupied, [`Arrived`] sent (or the order
/// it stepped aside from resumed).
fn stop_here(
    claims: &mut Claims,
    entity: Entity,
    progress: &mut PathProgress,
    cell: Cell,
    request: Option<&PathRequest>,
    arrived: &mut MessageWriter<Arrived>,
    commands: &mut Commands,
) {
    progress.state = MoveState::Arrived;
    progress.plan = None;
    progress.detour = false;
    progress.blocked = 0.0;
    progress.ghosting = false;
    progress.stuck_repaths = 0;
    release_all(claims, entity, progress);
    publish_intent(claims, entity, progress, None);
    claims.set_moving_at(entity, progress.moving_cell.take(), None);
    claims.set_stopped(entity, progress.stopped_cell, Some(cell));
    progress.stopped_cell = Some(cell);
    let stepped_aside = progress
        .resume
        .take()
        .filter(|(_, aside)| heading_to(request, *aside));
    let made_way = progress
        .making_way
        .take()
        .is_some_and(|c| heading_to(request, c));
    if let Some((resume, _)) = stepped_aside {
        commands.entity(entity).insert(resume);
    } else if !made_way {
        progress.yields = 0;
        arrived.write(Arrived { entity, cell });
        commands.trigger(Arrived { entity, cell });
    }
}

/// Releases the claims and occupancy of units that lost their mover or path.
pub(crate) fn release_departed(
    mut claims: ResMut<Claims>,
    mut removed: RemovedComponents<Mover>,
    mut progress: Query<&mut PathProgress>,
) {
    for entity in removed.read() {
        if let Ok(mut p) = progress.get_mut(entity) {
            release_all(&mut claims, entity, &mut p);
            p.intent = None; // forgotten below
        }
        // Despawned: its cells are found by scanning (rare).
        claims.forget_entity(entity);
    }
}
