//! Legal turns in the search (Pinter's directional A*): a search whose states are a cell, one
//! of eight headings and a gear (forward or reverse), whose moves are the straights and arcs of
//! a [`VehicleModel`], each legal only where the body it sweeps touches no blocked cell. Its
//! plans never turn tighter than the turning radius; where no forward way exists (a dead end, a
//! goal behind the vehicle in a narrow place) it reverses, and three-point turns come out of it.
//!
//! It is a user of the search kernel (its states are the kernel's nodes: padded cell x 16 +
//! heading x 2 + gear), resumable in budgeted steps like [`AStar`](super::AStar).

use bevy::math::IVec2;

use super::cell::{BLOCKED, Cell, cell_center};
use super::drive_plan::{DrivePlan, DriveSegment};
use super::grid::NavGrid;
use super::kernel::{
    self, CellOverlay, Closed, Counts, End, Expand, Frontier, KeyPacking, Marks, OVERLAY_BLOCKED,
    Pages, Scratch,
};
use super::path::PathError;
use super::vehicle::{HEADINGS, VehicleModel};

/// States per cell: eight headings, two gears.
const STATES: usize = HEADINGS as usize * 2;

/// How far a [`DriveSearch`] has come.
#[derive(Clone, Debug, PartialEq)]
pub enum DriveStep {
    /// The budget ran out: call [`DriveSearch::step`] again.
    Pending,
    /// The plan to the goal.
    Found(DrivePlan),
    /// No plan.
    Failed(PathError),
}

/// Where a vehicle's search starts and ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriveQuery {
    /// The cell it starts on.
    pub start: Cell,
    /// The heading it faces there (0-7, see [`heading_vector`](super::heading_vector)).
    pub heading: u8,
    /// The cell it goes to.
    pub goal: Cell,
    /// The heading it must face there, if any.
    pub facing: Option<u8>,
    /// No more states expanded than this.
    pub max_expansions: u32,
}

/// The search in progress.
#[derive(Clone, Debug)]
struct Driving {
    query: DriveQuery,
    model: VehicleModel,
    start_node: usize,
    goal_i: usize,
    counts: Counts,
    packing: KeyPacking,
    version: u64,
    min_terrain: u64,
    /// A reversing move's cost factor, in 1024ths, and the cost of a change of gear.
    reverse_factor: u64,
    switch_cost: u64,
    /// The cells its states may stand on, if it keeps to a band (see
    /// [`DriveSearch::begin_within`]).
    band: Option<Vec<Cell>>,
    /// Other units' cells, dearer or closed to its body (see [`DriveSearch::begin_among`]).
    overlay: Vec<(Cell, CellOverlay)>,
}

/// A reusable, resumable search for vehicles (see the module docs).
///
/// ```
/// use bevy_tilepath::core::{
///     Cell, CostModel, DriveQuery, DriveSearch, DriveStep, NavGrid, VehicleModel, VehicleRules,
/// };
///
/// let grid = NavGrid::new(16, 16).unwrap();
/// // A vehicle that never reverses.
/// let rules = VehicleRules { reverse: None, ..VehicleRules::default() };
/// let model = VehicleModel::new(rules, CostModel::EXACT).unwrap();
/// let mut search = DriveSearch::new();
/// // Facing east (0), to a cell behind it: it has to drive round.
/// let query = DriveQuery {
///     start: Cell::new(8, 8),
///     heading: 0,
///     goal: Cell::new(4, 8),
///     facing: None,
///     max_expansions: 100_000,
/// };
/// search.begin(&grid, &model, query).unwrap();
/// let plan = loop {
///     match search.step(&grid, 256) {
///         DriveStep::Pending => continue,
///         DriveStep::Found(plan) => break plan,
///         DriveStep::Failed(e) => panic!("{e}"),
///     }
/// };
/// assert!(plan.length() > 4.0 + std::f32::consts::PI * 1.5 / 2.0);
/// assert!(!plan.reverses());
/// ```
#[derive(Clone, Debug, Default)]
pub struct DriveSearch {
    scratch: Scratch,
    run: Option<Driving>,
}

impl DriveSearch {
    /// A search with no scratch yet (it grows to the grid's size on first use).
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a search is in progress.
    pub fn is_active(&self) -> bool {
        self.run.is_some()
    }

    /// States expanded so far by the search in progress (or the last one).
    pub fn expansions(&self) -> u64 {
        self.run.as_ref().map_or(0, |r| r.counts.expansions)
    }

    /// The memory its scratch holds, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.scratch.memory_bytes()
    }

    /// Starts a search for `query` on `grid` (square cells only) for the vehicle `model`;
    /// errors on ends outside the grid or blocked, on ends on different islands, and on
    /// hexagonal grids.
    pub fn begin(
        &mut self,
        grid: &NavGrid,
        model: &VehicleModel,
        query: DriveQuery,
    ) -> Result<(), PathError> {
        self.begin_with(grid, model, query, None, Vec::new())
    }

    /// As [`DriveSearch::begin`], with every state on a cell of `band` (the cells near a flat
    /// path, say: a long search stays in a corridor instead of flooding the map). The body may
    /// sweep cells outside it; the start and the goal are in it.
    pub fn begin_within(
        &mut self,
        grid: &NavGrid,
        model: &VehicleModel,
        query: DriveQuery,
        band: &[Cell],
    ) -> Result<(), PathError> {
        self.begin_with(grid, model, query, Some(band.to_vec()), Vec::new())
    }

    /// As [`DriveSearch::begin`] (or [`DriveSearch::begin_within`] with a `band`), with an
    /// overlay of other units' cells: a move whose body sweeps a
    /// [`CellOverlay::Blocked`] cell is not taken, and one that sweeps
    /// [`CellOverlay::Penalty`] cells costs the dearest of their penalties more (a vehicle
    /// plans round another standing in its way, or through it if going round costs more). The
    /// start and the goal cells are spared.
    pub fn begin_among(
        &mut self,
        grid: &NavGrid,
        model: &VehicleModel,
        query: DriveQuery,
        band: Option<&[Cell]>,
        overlay: &[(Cell, CellOverlay)],
    ) -> Result<(), PathError> {
        self.begin_with(
            grid,
            model,
            query,
            band.map(<[Cell]>::to_vec),
            overlay.to_vec(),
        )
    }

    fn begin_with(
        &mut self,
        grid: &NavGrid,
        model: &VehicleModel,
        query: DriveQuery,
        band: Option<Vec<Cell>>,
        overlay: Vec<(Cell, CellOverlay)>,
    ) -> Result<(), PathError> {
        self.run = None;
        let (start_i, goal_i) = ends(grid, &query)?;
        let padded = grid.terrain_raw().len();
        let len = padded
            .checked_mul(STATES)
            .filter(|&n| n < u32::MAX as usize)
            .ok_or(PathError::Unsupported(
                "grid too large for a vehicle search",
            ))?;
        self.scratch.next_generation(len, Pages::Lazy);
        if let Some(band) = &band {
            self.scratch.use_marks();
            let generation = self.scratch.generation;
            for &c in band.iter().chain([&query.start, &query.goal]) {
                if let Ok(i) = grid.index(c) {
                    self.scratch.marks[i] = generation;
                }
            }
        }
        let overlay_max = self
            .scratch
            .apply_overlay(grid, &overlay, [start_i, goal_i]);
        let costs = model.costs();
        let rules = model.rules();
        let reverse_factor = rules
            .reverse
            .map_or(1024, |r| (r.cost_factor * 1024.0) as u64);
        let switch_cost = rules.reverse.map_or(0, |r| costs.from_tiles(r.switch_cost)) as u64;
        let (factor, switch) = (reverse_factor as u128 / 1024, switch_cost as u128);
        // A move costs at most 4 tiles of the dearest terrain, reversed, plus a switch.
        let step = (costs.straight as u128 * 4 * 255 + grid.max_penalty() as u128) * (factor + 1)
            + switch
            + overlay_max as u128;
        let packing = KeyPacking::with_bound(len as u128 * step * 2, costs.straight);
        let min_terrain = grid.min_terrain().max(1) as u64;
        let start_node = start_i * STATES + node_of(query.heading, false);
        let run = Driving {
            query,
            model: model.clone(),
            start_node,
            goal_i,
            counts: Counts {
                max_expansions: query.max_expansions as u64,
                ..Counts::default()
            },
            packing,
            version: grid.version(),
            min_terrain,
            reverse_factor,
            switch_cost,
            band,
            overlay,
        };
        let h = run.h(grid, start_i);
        self.scratch.seed(start_node, packing.key(h, h));
        self.run = Some(run);
        Ok(())
    }

    /// Runs at most `budget` pops of the search.
    pub fn step(&mut self, grid: &NavGrid, budget: u32) -> DriveStep {
        let Some(run) = self.run.as_mut() else {
            return DriveStep::Failed(PathError::NotStarted);
        };
        if run.version != grid.version() {
            // The grid changed under it: start again from the same ends.
            let (model, query, band) = (run.model.clone(), run.query, run.band.take());
            let overlay = std::mem::take(&mut run.overlay);
            if let Err(e) = self.begin_with(grid, &model, query, band, overlay) {
                return DriveStep::Failed(e);
            }
            return DriveStep::Pending;
        }
        let closed_stamp = self.scratch.closed_stamp();
        let (mut frontier, marks) = self.scratch.split(run.packing);
        let mut expand = Drive {
            banded: run.band.is_some(),
            overlaid: !run.overlay.is_empty(),
            marks,
            grid,
            terrain: grid.terrain_raw(),
            penalty: grid.penalty_raw(),
            stride: grid.stride(),
            run: &*run,
        };
        let mut counts = run.counts;
        let end = kernel::run(
            &mut frontier,
            closed_stamp,
            budget,
            &mut counts,
            &mut expand,
        );
        run.counts = counts;
        let expansions = counts.expansions.min(u32::MAX as u64) as u32;
        match end {
            End::Budget => DriveStep::Pending,
            End::Goal(node) => {
                let plan = self.plan_to(grid, node);
                self.run = None;
                DriveStep::Found(plan)
            }
            End::Empty | End::Done => {
                self.run = None;
                DriveStep::Failed(PathError::NoPath)
            }
            End::Limit => {
                self.run = None;
                DriveStep::Failed(PathError::LimitExceeded { expansions })
            }
        }
    }

    /// The plan from the start to `goal_node`, read back along the parents.
    fn plan_to(&self, grid: &NavGrid, goal_node: usize) -> DrivePlan {
        let run = self.run.as_ref().expect("a search in progress");
        let mut nodes = vec![goal_node];
        let mut n = goal_node;
        while n != run.start_node {
            n = self.scratch.nodes[n].parent as usize;
            nodes.push(n);
        }
        nodes.reverse();
        let state = |n: usize| {
            let (i, h, gear) = decode(n);
            (grid.cell_of(i), h, gear)
        };
        let mut segments = Vec::new();
        let mut distances = vec![0.0];
        for pair in nodes.windows(2) {
            let (from, h, _) = state(pair[0]);
            let (to, h1, reverse) = state(pair[1]);
            let mv = run
                .model
                .moves(h)
                .iter()
                .find(|m| m.to_heading == h1 && m.reverse == reverse && from + m.offset == to)
                .expect("every step of a plan is a move of its model");
            let at = cell_center(from);
            segments.extend(mv.segments.iter().map(|s| s.shifted(at)));
            let length: f32 = mv.segments.iter().map(DriveSegment::length).sum();
            distances.push(distances[distances.len() - 1] + length);
        }
        DrivePlan {
            states: nodes
                .iter()
                .map(|&n| {
                    let (c, h, _) = state(n);
                    (c, h)
                })
                .collect(),
            distances,
            segments,
            cost: self.scratch.nodes[goal_node].g,
            expansions: run.counts.expansions.min(u32::MAX as u64) as u32,
        }
    }
}

/// The padded indices of `query`'s start and goal on `grid`, or why it cannot be searched: a
/// hexagonal grid, an end outside the grid or blocked, ends on different islands.
fn ends(grid: &NavGrid, query: &DriveQuery) -> Result<(usize, usize), PathError> {
    if grid.is_hex() {
        return Err(PathError::Unsupported("vehicle searches need square cells"));
    }
    let start_i = grid
        .index(query.start)
        .map_err(|_| PathError::StartOutOfBounds(query.start))?;
    let goal_i = grid
        .index(query.goal)
        .map_err(|_| PathError::GoalOutOfBounds(query.goal))?;
    if !grid.is_walkable(query.start) {
        return Err(PathError::StartBlocked(query.start));
    }
    if !grid.is_walkable(query.goal) {
        return Err(PathError::GoalBlocked(query.goal));
    }
    if !grid.same_island(query.start, query.goal) {
        return Err(PathError::Unreachable);
    }
    Ok((start_i, goal_i))
}

/// A whole search for `query` at once (see [`DriveSearch`]).
pub fn find_drive(
    grid: &NavGrid,
    model: &VehicleModel,
    query: DriveQuery,
) -> Result<DrivePlan, PathError> {
    let mut search = DriveSearch::new();
    search.begin(grid, model, query)?;
    loop {
        match search.step(grid, u32::MAX) {
            DriveStep::Pending => {}
            DriveStep::Found(plan) => return Ok(plan),
            DriveStep::Failed(e) => return Err(e),
        }
    }
}

/// The cells of `grid` within `margin` cells (square rings) of `cells`: the band a vehicle's
/// search keeps to around a flat path ([`DriveSearch::begin_within`]).
pub fn band_around(grid: &NavGrid, cells: &[Cell], margin: u32) -> Vec<Cell> {
    let m = margin as i32;
    let mut band: Vec<Cell> = cells
        .iter()
        .flat_map(|&c| (-m..=m).flat_map(move |dy| (-m..=m).map(move |dx| c + Cell::new(dx, dy))))
        .filter(|&c| grid.is_walkable(c))
        .collect();
    band.sort_unstable_by_key(|c| (c.y, c.x));
    band.dedup();
    band
}

/// The state index within a cell of heading `h` in a gear.
#[inline(always)]
fn node_of(h: u8, reverse: bool) -> usize {
    h as usize * 2 + reverse as usize
}

/// The padded cell, heading and gear of a node.
#[inline(always)]
fn decode(n: usize) -> (usize, u8, bool) {
    let s = n % STATES;
    (n / STATES, (s / 2) as u8, s % 2 == 1)
}

impl Driving {
    /// The estimate from padded cell `i`: the straight-line distance to the goal on the
    /// cheapest terrain (no move is shorter than the line between its ends).
    #[inline(always)]
    fn h(&self, grid: &NavGrid, i: usize) -> u64 {
        let c = grid.cell_of(i);
        let d = (c - self.query.goal).as_vec2().length() as f64;
        (d * 0.999 * self.model.costs().straight as f64) as u64 * self.min_terrain
    }
}

/// The search's part in the kernel's loop.
struct Drive<'a> {
    /// States keep to the marked cells.
    banded: bool,
    /// Cells of the overlay are dearer or closed.
    overlaid: bool,
    marks: Marks<'a>,
    grid: &'a NavGrid,
    terrain: &'a [u8],
    penalty: &'a [u32],
    stride: usize,
    run: &'a Driving,
}

impl Drive<'_> {
    /// The padded index of the cell `offset` from padded cell `i` (column `x`, row `y`), if it is
    /// on the grid.
    #[inline(always)]
    fn at(&self, x: i32, y: i32, i: usize, offset: IVec2) -> Option<usize> {
        let (cx, cy) = (x + offset.x, y + offset.y);
        if cx < 0 || cy < 0 || cx >= self.grid.width() as i32 || cy >= self.grid.height() as i32 {
            return None;
        }
        Some((i as isize + offset.y as isize * self.stride as isize + offset.x as isize) as usize)
    }
}

impl Expand for Drive<'_> {
    #[inline(always)]
    fn closed(&mut self, n: usize) -> Closed {
        let (i, h, _) = decode(n);
        let facing_ok = self.run.query.facing.is_none_or(|f| f == h);
        if i == self.run.goal_i && facing_ok {
            Closed::Goal
        } else {
            Closed::Expand
        }
    }

    fn expand(&mut self, n: usize, frontier: &mut Frontier) -> u32 {
        let (i, h, gear) = decode(n);
        let cell = self.grid.cell_of(i);
        let g0 = frontier.g(n);
        let run = self.run;
        'moves: for mv in run.model.moves(h) {
            // The dearest overlay the body sweeps.
            let mut extra = 0;
            for &off in &mv.swept {
                match self.at(cell.x, cell.y, i, off) {
                    Some(j) if self.terrain[j] != BLOCKED => {
                        if self.overlaid {
                            extra = extra.max(self.marks.extra(j));
                        }
                    }
                    _ => continue 'moves,
                }
            }
            if extra == OVERLAY_BLOCKED {
                continue;
            }
            let Some(end) = self.at(cell.x, cell.y, i, mv.offset) else {
                continue;
            };
            if self.banded && !self.marks.marked(end) {
                continue;
            }
            let mut cost: u64 = 0;
            for &(off, len) in &mv.lengths {
                // Swept cells cover the center line: every one is on the grid and open.
                let j =
                    (i as isize + off.y as isize * self.stride as isize + off.x as isize) as usize;
                cost += len * self.terrain[j] as u64;
            }
            if mv.reverse {
                cost = cost * run.reverse_factor / 1024;
            }
            if mv.reverse != gear {
                cost += run.switch_cost;
            }
            cost += self.penalty[end] as u64 + extra as u64;
            let to = end * STATES + node_of(mv.to_heading, mv.reverse);
            let grid = self.grid;
            frontier.relax(n, to, g0 + cost, || run.h(grid, end));
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use bevy::math::Vec2;

    use super::super::cost::CostModel;
    use super::super::drive_plan::{DriveSegment, Pose};
    use super::super::search::{SearchConfig, find_path};
    use super::super::vehicle::{ReverseRules, VehicleRules, heading_vector};
    use super::*;

    fn model(radius: f32, reverse: bool) -> VehicleModel {
        VehicleModel::new(
            VehicleRules {
                turning_radius: radius,
                body_radius: 0.3,
                reverse: reverse.then(ReverseRules::default),
            },
            CostModel::EXACT,
        )
        .unwrap()
    }

    fn query(start: (i32, i32), heading: u8, goal: (i32, i32)) -> DriveQuery {
        DriveQuery {
            start: Cell::new(start.0, start.1),
            heading,
            goal: Cell::new(goal.0, goal.1),
            facing: None,
            max_expansions: 1_000_000,
        }
    }

    /// Walks `plan` in small steps and checks what a vehicle driving it would feel: no jump, no
    /// turn tighter than the radius, facing changing only along curves, and the body (radius
    /// 0.3) never over a blocked cell.
    fn check_drivable(grid: &NavGrid, plan: &DrivePlan, radius: f32, start_heading: u8) {
        let first = plan.pose_at(0.0).unwrap();
        assert!(first.facing.distance(heading_vector(start_heading)) < 1e-3);
        let len = plan.length();
        let n = (len / 0.01).ceil() as usize;
        let mut last = first;
        let ds = len / n as f32;
        for k in 1..=n {
            let s = ds * k as f32;
            let pose = plan.pose_at(s).unwrap();
            let moved = pose.position.distance(last.position);
            assert!(moved < 0.02, "jump at {s}: {moved}");
            // The facing turns at most (distance driven / radius) radians.
            let turned = last.facing.angle_to(pose.facing).abs();
            assert!(
                turned <= ds / radius + 1e-3,
                "turned {turned} over {ds} at {s}"
            );
            let p = pose.position;
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let c = Cell::new(p.x.floor() as i32 + dx, p.y.floor() as i32 + dy);
                    if grid.is_walkable(c) {
                        continue;
                    }
                    let nearest = p.clamp(c.as_vec2(), c.as_vec2() + Vec2::ONE);
                    assert!(
                        nearest.distance(p) >= 0.3 - 1e-3,
                        "body over blocked {c} at {p}"
                    );
                }
            }
            last = pose;
        }
        // What a driving vehicle checks its plan with after an edit agrees: clear throughout.
        assert_eq!(plan.first_blocked(grid, 0.0, 0.3 - 0.02), None);
    }

    #[test]
    fn in_the_open_a_plan_ahead_is_the_straight_line() {
        let grid = NavGrid::new(20, 20).unwrap();
        let plan = find_drive(&grid, &model(1.5, true), query((2, 5), 0, (12, 5))).unwrap();
        assert!((plan.length() - 10.0).abs() < 1e-3, "{}", plan.length());
        assert!(!plan.reverses());
        check_drivable(&grid, &plan, 1.5, 0);
    }

    #[test]
    fn a_wall_put_across_a_plan_is_found_where_the_body_first_touches_it() {
        let mut grid = NavGrid::new(20, 20).unwrap();
        let plan = find_drive(&grid, &model(1.5, true), query((2, 5), 0, (12, 5))).unwrap();
        grid.set_walkable(Cell::new(8, 5), false).unwrap();
        // The body (0.28) starts at x = 2.5 and touches the wall's face x = 8 at x = 7.72.
        let at = plan.first_blocked(&grid, 0.0, 0.28).unwrap();
        assert!((at - 5.22).abs() <= 0.1, "{at}");
        assert_eq!(plan.first_blocked(&grid, 2.0, 0.28), Some(at));
        // Past the wall, the rest of the plan is clear.
        assert_eq!(plan.first_blocked(&grid, 7.0, 0.28), None);
    }

    #[test]
    fn from_anywhere_on_a_plan_it_can_back_to_the_state_before_and_go_on_from_there() {
        let grid = NavGrid::new(24, 24).unwrap();
        let m = model(2.0, true);
        // A loop round to a goal behind: arcs and straights.
        let plan = find_drive(&grid, &m, query((12, 12), 0, (9, 12))).unwrap();
        let close = |a: Pose, b: Pose| {
            a.position.distance(b.position) < 1e-3 && a.facing.distance(b.facing) < 1e-3
        };
        for tenth in 0..(plan.length() * 10.0) as usize {
            let along = tenth as f32 / 10.0;
            let k = plan.state_before(along).unwrap();
            let back = plan.back_to_state(along);
            assert!(plan.distances[k] <= along + 1e-4);
            assert!(plan.distances.get(k + 1).is_none_or(|&d| d > along));
            let back_len: f32 = back.iter().map(DriveSegment::length).sum();
            assert!((back_len - (along - plan.distances[k])).abs() < 1e-3);
            // From its state on, a plan of its own; the pieces back join it to where it is.
            let (cell, heading) = plan.states[k];
            let mut on = query((cell.x, cell.y), heading, (9, 12));
            on.max_expansions = 1_000_000;
            let joined = find_drive(&grid, &m, on).unwrap().after(back);
            let here = plan.pose_at(along).unwrap();
            let start = joined.pose_at(0.0).unwrap();
            assert!(
                close(
                    start,
                    Pose {
                        reverse: start.reverse,
                        curvature: start.curvature,
                        ..here
                    }
                ),
                "{along}"
            );
            assert!(
                back_len < 1e-4 || start.reverse != here.reverse,
                "backs in the other gear"
            );
            let at_state = joined.pose_at(back_len).unwrap();
            assert!(close(
                at_state,
                Pose {
                    reverse: at_state.reverse,
                    curvature: at_state.curvature,
                    ..plan.pose_at(plan.distances[k]).unwrap()
                }
            ));
            assert!((joined.distances[0] - back_len).abs() < 1e-4);
            assert_eq!(joined.first_blocked(&grid, 0.0, 0.28), None);
        }
    }

    #[test]
    fn another_unit_standing_in_the_way_is_driven_round_or_through_as_its_overlay_says() {
        let grid = NavGrid::new(20, 20).unwrap();
        let m = model(1.5, true);
        let q = query((2, 5), 0, (16, 5));
        // A body standing on cells (9..=10, 4..=6), right across the straight line.
        let standing = |o: CellOverlay| -> Vec<(Cell, CellOverlay)> {
            (9..=10)
                .flat_map(|x| (4..=6).map(move |y| (Cell::new(x, y), o)))
                .collect()
        };
        let drive = |overlay: &[(Cell, CellOverlay)]| {
            let mut search = DriveSearch::new();
            search.begin_among(&grid, &m, q, None, overlay).unwrap();
            loop {
                match search.step(&grid, 1024) {
                    DriveStep::Pending => continue,
                    DriveStep::Found(plan) => break plan,
                    DriveStep::Failed(e) => panic!("{e}"),
                }
            }
        };
        let covers = |plan: &DrivePlan| {
            let blocked = standing(CellOverlay::Blocked);
            (0..=(plan.length() * 20.0) as usize).any(|k| {
                let p = plan.pose_at(k as f32 / 20.0).unwrap().position;
                blocked.iter().any(|(c, _)| {
                    let near = p.clamp(c.as_vec2(), c.as_vec2() + Vec2::ONE);
                    near.distance(p) < 0.3
                })
            })
        };
        let straight = drive(&[]);
        assert!(covers(&straight));
        for o in [
            CellOverlay::Blocked,
            CellOverlay::Penalty(40 * CostModel::EXACT.straight),
        ] {
            let round = drive(&standing(o));
            assert!(!covers(&round), "{o:?}");
            assert!(round.length() > straight.length());
            check_drivable(&grid, &round, 1.5, 0);
        }
        // Going round costs more than a small penalty: it drives through.
        let cheap = drive(&standing(CellOverlay::Penalty(
            CostModel::EXACT.straight / 4,
        )));
        assert!((cheap.length() - straight.length()).abs() < 1e-3);
    }

    #[test]
    fn a_goal_behind_is_reached_by_a_legal_loop_not_a_turn_in_place() {
        let grid = NavGrid::new(24, 24).unwrap();
        let m = model(2.0, false);
        let plan = find_drive(&grid, &m, query((12, 12), 0, (9, 12))).unwrap();
        // A U-turn of radius 2 needs at least a half circle: pi * 2 tiles.
        assert!(
            plan.length() > std::f32::consts::PI * 2.0,
            "{}",
            plan.length()
        );
        check_drivable(&grid, &plan, 2.0, 0);
        let flat = find_path(
            &grid,
            Cell::new(12, 12),
            Cell::new(9, 12),
            &SearchConfig::default(),
        )
        .unwrap();
        assert!(plan.length() as f64 > flat.length);
    }

    #[test]
    fn in_a_dead_end_it_backs_out() {
        // A corridor 3 wide (rows 9-11) closed at x = 15; the vehicle faces the end, its goal is
        // behind it at the open end.
        let mut grid = NavGrid::new(20, 20).unwrap();
        for x in 0..20 {
            for y in 0..20 {
                let inside = (9..=11).contains(&y) && x < 15;
                if !inside {
                    grid.set_walkable(Cell::new(x, y), false).unwrap();
                }
            }
        }
        let with = find_drive(&grid, &model(1.5, true), query((13, 10), 0, (1, 10))).unwrap();
        assert!(with.reverses());
        check_drivable(&grid, &with, 1.5, 0);
        // Forward only, there is no way out of a corridor too narrow to turn in.
        let without = find_drive(&grid, &model(1.5, false), query((13, 10), 0, (1, 10)));
        assert_eq!(without, Err(PathError::NoPath));
    }

    #[test]
    fn a_three_point_turn_where_the_road_is_too_narrow_for_a_u_turn() {
        // A road 4 wide open at both ends: the goal is behind, and radius 2 needs 4 + body to
        // loop; reversing once or twice turns it round.
        let mut grid = NavGrid::new(40, 12).unwrap();
        for x in 0..40 {
            for y in 0..12 {
                if !(4..=7).contains(&y) {
                    grid.set_walkable(Cell::new(x, y), false).unwrap();
                }
            }
        }
        let mut q = query((20, 5), 0, (10, 5));
        // Backing all the way is not turning round: it must arrive facing west.
        q.facing = Some(4);
        let plan = find_drive(&grid, &model(2.0, true), q).unwrap();
        assert!(
            plan.reverses(),
            "turned round without reversing: {:?}",
            plan.states
        );
        assert!(plan.gear_changes() >= 1, "{:?}", plan.states);
        check_drivable(&grid, &plan, 2.0, 0);
        assert_eq!(*plan.states.last().unwrap(), (Cell::new(10, 5), 4));
        // Without a facing it may also back there: never dearer.
        let free = find_drive(&grid, &model(2.0, true), query((20, 5), 0, (10, 5))).unwrap();
        assert!(free.cost <= plan.cost);
    }

    #[test]
    fn it_arrives_facing_the_way_asked() {
        let grid = NavGrid::new(24, 24).unwrap();
        let mut q = query((4, 4), 0, (16, 16));
        for facing in [2, 4, 6] {
            q.facing = Some(facing);
            let plan = find_drive(&grid, &model(1.5, true), q).unwrap();
            assert_eq!(plan.states.last().unwrap().1, facing);
            let end = plan.pose_at(plan.length()).unwrap();
            assert!(end.facing.distance(heading_vector(facing)) < 1e-3);
            check_drivable(&grid, &plan, 1.5, 0);
        }
    }

    #[test]
    fn round_corners_of_a_maze_the_body_never_touches_a_wall() {
        let mut grid = NavGrid::new(32, 32).unwrap();
        // Walls with gaps 3 wide, alternating sides.
        for (k, x) in [8, 16, 24].into_iter().enumerate() {
            for y in 0..32 {
                let gap = if k % 2 == 0 { 26..=28 } else { 3..=5 };
                if !gap.contains(&y) {
                    grid.set_walkable(Cell::new(x, y), false).unwrap();
                }
            }
        }
        let plan = find_drive(&grid, &model(1.5, true), query((2, 16), 0, (29, 16))).unwrap();
        check_drivable(&grid, &plan, 1.5, 0);
        let flat = find_path(
            &grid,
            Cell::new(2, 16),
            Cell::new(29, 16),
            &SearchConfig::default(),
        )
        .unwrap();
        assert!(
            (plan.length() as f64) < flat.length * 1.5,
            "{} vs {}",
            plan.length(),
            flat.length
        );
    }

    #[test]
    fn a_search_kept_to_a_band_round_the_flat_path_stays_in_it() {
        let mut grid = NavGrid::new(48, 48).unwrap();
        for (k, x) in [12, 24, 36].into_iter().enumerate() {
            for y in 0..48 {
                let gap = if k % 2 == 0 { 40..=43 } else { 4..=7 };
                if !gap.contains(&y) {
                    grid.set_walkable(Cell::new(x, y), false).unwrap();
                }
            }
        }
        let m = model(1.5, true);
        let q = query((2, 24), 0, (45, 24));
        let flat = find_path(&grid, q.start, q.goal, &SearchConfig::default()).unwrap();
        let band = band_around(&grid, &flat.cells, 3);
        let mut search = DriveSearch::new();
        search.begin_within(&grid, &m, q, &band).unwrap();
        let DriveStep::Found(kept) = search.step(&grid, u32::MAX) else {
            panic!("no plan in the band");
        };
        assert!(kept.states.iter().all(|(c, _)| band.contains(c)));
        check_drivable(&grid, &kept, 1.5, 0);
        let free = find_drive(&grid, &m, q).unwrap();
        assert!(
            kept.expansions < free.expansions,
            "{} vs {}",
            kept.expansions,
            free.expansions
        );
        assert!(kept.cost as f64 <= free.cost as f64 * 1.1);
    }

    #[test]
    fn bad_ends_are_errors_and_a_search_resumes_over_slices() {
        let mut grid = NavGrid::new(10, 10).unwrap();
        grid.set_walkable(Cell::new(5, 5), false).unwrap();
        let m = model(1.5, true);
        let err = |q| find_drive(&grid, &m, q).unwrap_err();
        assert_eq!(
            err(query((5, 5), 0, (1, 1))),
            PathError::StartBlocked(Cell::new(5, 5))
        );
        assert_eq!(
            err(query((1, 1), 0, (5, 5))),
            PathError::GoalBlocked(Cell::new(5, 5))
        );
        assert_eq!(
            err(query((1, 1), 0, (10, 1))),
            PathError::GoalOutOfBounds(Cell::new(10, 1))
        );
        let mut search = DriveSearch::new();
        assert_eq!(
            search.step(&grid, 10),
            DriveStep::Failed(PathError::NotStarted)
        );
        search.begin(&grid, &m, query((1, 1), 0, (8, 8))).unwrap();
        let mut slices = 0;
        let plan = loop {
            slices += 1;
            match search.step(&grid, 3) {
                DriveStep::Pending => {}
                DriveStep::Found(p) => break p,
                DriveStep::Failed(e) => panic!("{e}"),
            }
        };
        assert!(slices > 1);
        assert_eq!(
            plan,
            find_drive(&grid, &m, query((1, 1), 0, (8, 8))).unwrap()
        );
        let mut hex = NavGrid::with_rules(
            8,
            8,
            super::super::grid::MoveRules {
                topology: super::super::grid::Topology::Hex,
                ..Default::default()
            },
        )
        .unwrap();
        hex.set_walkable(Cell::new(0, 0), true).unwrap();
        assert!(matches!(
            find_drive(&hex, &m, query((1, 1), 0, (5, 5))),
            Err(PathError::Unsupported(_))
        ));
    }
}
