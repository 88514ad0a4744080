//! Shared searches: waiting requests to one goal cell (or one group target) on one map are served
//! by one backward search, a [`GoalTree`], grown until every member's start is settled; each
//! member's path is read off the tree (a group slot's last tiles are its own short A*).
//! Finished trees are kept in a small cache ([`TreeCache`]) for later requests to the same goal
//! while the grid is unchanged. A tree the grid is edited under keeps what it settled and goes
//! on ([`GoalTree::follow_edits`]): its members' paths are checked against the grid as it is
//! and a member whose path an edit broke searches alone.
//!
//! With [`TilepathSettings::lanes`](crate::TilepathSettings::lanes), a group order's members do
//! not all follow the tree's one corridor: once the tree is grown, the path of the member nearest
//! the group's centre becomes the group's reference, and each member walks it shifted sideways
//! by its [`Lane`] (its slot's offset across the group's way), squeezed into the room the route
//! has (see [`Lanes`]), then its own A* to its slot. Where a wall or a cell of the search's
//! overlay (another unit's claim, a stopped unit) is in a lane's way, the lane steps back
//! towards the reference path, which the tree steered round them; a member that cannot be walked
//! so, or that stands far from the group, follows the tree.
//!
//! Claims are a per-search overlay: a shared search takes the claims and stopped cells of units
//! that are *not* its members, within the claim radius of the box of its members' starts. The
//! members' own spread comes from their slots and from movement. A tree reused from the cache
//! keeps the overlay it was grown with.

use bevy::prelude::*;

use bevy::platform::collections::{HashMap, HashSet};

use crate::core::{
    AStar, Cell, CellOverlay, GoalTree, Lane, LaneWalk, Lanes, NavGrid, Path, SearchConfig,
    TreeStep,
};
use crate::plugin::classes::ClassId;
use crate::plugin::diagnostics::Cost;
use crate::plugin::outcomes::SearchKind;

use super::job::{Job, JobGoal, SearchResult, config_to, tiles_between};

/// A unit served by a shared search.
pub(super) struct Member {
    pub(super) job: Job,
    pub(super) start: Cell,
    pub(super) radius: f32,
    /// Its lane, once the search has planned them (`None`: it follows the tree).
    pub(super) lane: Option<Lane>,
}

impl Member {
    /// A member that has no lane yet.
    pub(super) fn new(job: Job, start: Cell, radius: f32) -> Self {
        Member {
            job,
            start,
            radius,
            lane: None,
        }
    }
}

/// A group's lanes: the reference path with the room beside it, and the cells of the search's
/// overlay (other units' claims and stopped units: a lane never crosses one, stepping back
/// towards the reference path instead, which the tree steered round them).
struct GroupLanes {
    guide: Lanes,
    overlaid: HashSet<Cell>,
    /// Each lane walked once along the whole reference path, by its lateral offset and rank
    /// (`None`: it cannot be walked).
    walks: HashMap<(u32, u32), Option<LaneWalk>>,
}

/// One shared search: a tree from `goal` and the units it serves.
pub(super) struct SharedSearch {
    pub(super) map: Entity,
    /// The class whose grid it searches.
    pub(super) class: ClassId,
    pub(super) goal: Cell,
    tree: Box<GoalTree>,
    overlay: Vec<(Cell, CellOverlay)>,
    members: Vec<Member>,
    /// The tree has begun (a fresh tree begins at the first step).
    begun: bool,
    /// Every member's start is settled (or never can be).
    grown: bool,
    /// Whether group members walk lanes ([`TilepathSettings::lanes`](crate::TilepathSettings::lanes)).
    lanes_on: bool,
    /// The lanes, planned when the tree is first grown (`None` before, or without lanes).
    lanes: Option<GroupLanes>,
    /// The lanes were planned (or there were none to plan).
    planned: bool,
    /// The grid was edited since the tree began: the tree follows the edits
    /// ([`GoalTree::follow_edits`]) and lanes' paths are checked against the grid.
    edited: bool,
}

/// A shared search as it was before a step (see [`SharedSearch::step_costs`]).
#[derive(Clone, Copy)]
pub(super) struct BeforeStep {
    /// The tree's expansions.
    pub(super) expansions: u64,
    members: usize,
    planned: bool,
}

/// What one step of a shared search did.
pub(super) enum SharedStep {
    /// The tree grew (and needs more).
    Growing,
    /// A member's path, with its body radius.
    Served(SearchResult, f32),
    /// A member the tree cannot serve (no path under its overlay, or a slot it could not
    /// reach): it searches alone.
    Alone(Job),
    /// Every member is served: the tree can go to the cache.
    Idle,
}

impl SharedSearch {
    /// A shared search on `tree`: grown afresh from `goal` with `overlay` (`fresh`; the tree
    /// begins at its first step, so a worker, not the main thread, pays for a new tree's memory),
    /// or a tree from the cache that goes on where it stopped.
    pub(super) fn new(
        (map, class): MapClass,
        goal: Cell,
        tree: Box<GoalTree>,
        overlay: Vec<(Cell, CellOverlay)>,
        fresh: bool,
        lanes: bool,
    ) -> Self {
        SharedSearch {
            map,
            class,
            goal,
            tree,
            overlay,
            members: Vec::new(),
            begun: !fresh,
            grown: false,
            lanes_on: lanes,
            lanes: None,
            planned: false,
            edited: false,
        }
    }

    /// The highest priority among its members waiting to be served (a player's order outranks
    /// a script's or the plugin's own).
    pub(super) fn priority(&self) -> i32 {
        self.members
            .iter()
            .map(|m| m.job.priority)
            .max()
            .unwrap_or(i32::MIN)
    }

    /// Adds members; the tree grows on until their starts are settled too.
    pub(super) fn add(&mut self, grid: &NavGrid, members: Vec<Member>) {
        if self.begun {
            let starts: Vec<Cell> = members.iter().map(|m| m.start).collect();
            self.tree.add_starts(grid, &starts);
        }
        self.members.extend(members);
        self.grown = false;
    }

    /// Begins the tree from the goal with every member's start (a goal that cannot start a tree
    /// leaves it empty: every member then searches alone).
    fn begin(&mut self, grid: &NavGrid, config: &SearchConfig) {
        self.begun = true;
        if self
            .tree
            .begin(grid, self.goal, &self.overlay, config.heuristic)
            .is_ok()
        {
            let starts: Vec<Cell> = self.members.iter().map(|m| m.start).collect();
            self.tree.add_starts(grid, &starts);
        }
    }

    /// Its size, for the work it is expected to take: the square of the tiles from its
    /// farthest member's start to the goal (a tree grows over an area; see `Ledger` in
    /// `workers.rs`).
    pub(super) fn size(&self) -> u64 {
        let far = self
            .members
            .iter()
            .map(|m| tiles_between(m.start, self.goal))
            .max()
            .unwrap_or(1);
        far * far
    }

    /// What [`SharedSearch::step_costs`] needs of the search as it was before a step.
    pub(super) fn before_step(&self) -> BeforeStep {
        BeforeStep {
            expansions: self.expansions(),
            members: self.members_waiting(),
            planned: self.lanes_planned(),
        }
    }

    /// The work of the step `step` taken since `before`, counted as budgets count it: the tree
    /// grown, the lanes if they were planned in it, and a member served (its path read off the
    /// tree or its lane, and a group slot's last tiles searched on their own with `search`).
    pub(super) fn step_costs(
        &self,
        before: BeforeStep,
        step: &SharedStep,
        search: &AStar,
    ) -> impl Iterator<Item = Cost> + use<> {
        let grown = self.expansions().saturating_sub(before.expansions);
        let lanes =
            (!before.planned && self.lanes_planned()).then_some(Cost::Lanes(before.members as u64));
        let served = match step {
            SharedStep::Served(r, _) => {
                let cells = r.result.as_ref().map_or(0, |p| p.cells.len());
                let slot = matches!(r.job.goal, JobGoal::Slot { slot, target } if slot != target)
                    .then(|| Cost::Expansions(search.expansions()));
                [Some(Cost::Member(cells as u64)), slot]
            }
            _ => [None, None],
        };
        [Some(Cost::Tree(grown)), Some(Cost::Step), lanes]
            .into_iter()
            .chain(served)
            .flatten()
    }

    /// Node expansions so far.
    pub(super) fn expansions(&self) -> u64 {
        self.tree.expansions()
    }

    /// How many members wait to be served.
    pub(super) fn members_waiting(&self) -> usize {
        self.members.len()
    }

    /// Whether its members' lanes are planned (or there are none to plan).
    pub(super) fn lanes_planned(&self) -> bool {
        self.planned || !self.lanes_on
    }

    /// One step: grow the tree by at most `max_pops` heap pops until every member's start is
    /// settled (a tree the grid changed under follows the edits: [`GoalTree::follow_edits`]),
    /// then serve one member (members `keep` rejects are dropped: their requests ended
    /// meanwhile; a member whose path an edit broke searches alone). `search` runs a slot's
    /// last tiles.
    pub(super) fn step(
        &mut self,
        grid: &NavGrid,
        max_pops: u32,
        search: &mut AStar,
        config: &SearchConfig,
        keep: impl Fn(&Job) -> bool,
    ) -> SharedStep {
        if !self.begun {
            self.begin(grid, config);
            return SharedStep::Growing;
        }
        if self.tree.version().is_some_and(|v| v != grid.version()) {
            // The grid changed under the tree: it keeps what it settled and goes on over the
            // grid as it is (restarting a tree over the whole map on every edit anywhere kept
            // a big group order waiting while the map changed every few frames); paths read
            // off it, and the lanes' walks, are checked against the grid now. A tree that
            // cannot follow (the grid's size or rules changed) starts again.
            self.edited = true;
            if !self.tree.follow_edits(grid) {
                self.grown = false;
            }
        }
        if !self.grown {
            match self.tree.step(grid, max_pops) {
                TreeStep::Pending => return SharedStep::Growing,
                TreeStep::Done => self.grown = true,
                TreeStep::Stale => {
                    // The grid changed under it: start again (same goal, overlay, members).
                    self.begin(grid, config);
                    return SharedStep::Growing;
                }
            }
        }
        if self.lanes_on && !self.planned {
            self.plan_lanes(grid);
        }
        while let Some(m) = self.members.pop() {
            if !keep(&m.job) {
                continue;
            }
            let lanes = self.lanes.as_mut();
            let edited = self.edited;
            let path = lanes
                .and_then(|l| lane_path(l, grid, &m, &self.overlay, search, config))
                .filter(|p| !edited || grid.steps_allowed(&p.cells))
                .or_else(|| member_path(&self.tree, grid, &m, &self.overlay, search, config));
            return match path {
                Some(path) => SharedStep::Served(
                    SearchResult {
                        job: m.job,
                        version: grid.version(),
                        result: Ok(path),
                        smoothed: Vec::new(),
                        worker: false,
                        search: SearchKind::Shared,
                        rest: None,
                    },
                    m.radius,
                ),
                None => SharedStep::Alone(Job {
                    alone: true,
                    ..m.job
                }),
            };
        }
        SharedStep::Idle
    }

    /// Plans the lanes of the group's members (those going to slots): their lateral offsets
    /// across the way from the centre of their starts to the target, and the reference path, the
    /// tree's path from the start nearest that centre. Members added later follow the tree.
    fn plan_lanes(&mut self, grid: &NavGrid) {
        self.planned = true;
        let slotted: Vec<usize> = (0..self.members.len())
            .filter(|&k| matches!(self.members[k].job.goal, JobGoal::Slot { .. }))
            .collect();
        if slotted.len() < 2 {
            return;
        }
        let target = grid.cell_center(self.goal);
        let starts: Vec<Vec2> = slotted
            .iter()
            .map(|&k| grid.cell_center(self.members[k].start))
            .collect();
        let centre = starts.iter().copied().sum::<Vec2>() / starts.len() as f32;
        let Some(way) = (target - centre).try_normalize() else {
            return;
        };
        let across = Vec2::new(-way.y, way.x);
        let laterals: Vec<f32> = slotted
            .iter()
            .map(|&k| match self.members[k].job.goal {
                // In whole tiles: members a tile apart share a lane, walked once.
                JobGoal::Slot { slot, .. } => (grid.cell_center(slot) - target).dot(across).round(),
                _ => 0.0,
            })
            .collect();
        let leader = (0..starts.len())
            .min_by(|&a, &b| {
                starts[a]
                    .distance_squared(centre)
                    .total_cmp(&starts[b].distance_squared(centre))
                    .then(a.cmp(&b))
            })
            .expect("two or more");
        let Some(reference) = self
            .tree
            .path_from(grid, self.members[slotted[leader]].start)
        else {
            return;
        };
        let spread = laterals.iter().fold(0.0f32, |m, l| m.max(l.abs()));
        for (&k, lane) in slotted.iter().zip(Lane::spread(&laterals)) {
            self.members[k].lane = Some(lane);
        }
        self.lanes = Some(GroupLanes {
            guide: Lanes::new(grid, &reference.cells, spread),
            overlaid: self.overlay.iter().map(|&(c, _)| c).collect(),
            walks: HashMap::default(),
        });
    }

    /// The jobs of the members not served yet (the search stops here).
    pub(super) fn unserved(&mut self) -> Vec<Job> {
        self.members.drain(..).map(|m| m.job).collect()
    }

    /// The tree and its overlay, for the cache.
    pub(super) fn into_tree(self) -> (Box<GoalTree>, Vec<(Cell, CellOverlay)>) {
        (self.tree, self.overlay)
    }
}

/// Tiles beyond a slot's distance from the target at which its unit leaves the shared path.
const SLOT_MARGIN: f32 = 2.0;

/// A member's path: the tree's path to its goal, or for a group slot, the tree's path up to
/// where it comes within the slot's distance of the target (plus [`SLOT_MARGIN`]), then the
/// unit's own A* to the slot.
fn member_path(
    tree: &GoalTree,
    grid: &NavGrid,
    m: &Member,
    overlay: &[(Cell, CellOverlay)],
    search: &mut AStar,
    config: &SearchConfig,
) -> Option<Path> {
    let to_target = tree.path_from(grid, m.start)?;
    let JobGoal::Slot { slot, target } = m.job.goal else {
        return Some(to_target);
    };
    if slot == target {
        return Some(to_target);
    }
    // Where the shared path enters the circle around the target that holds the slot (plus a
    // margin): from there the slot is at most about the circle's diameter away.
    let reach = slot_reach(grid, slot, target);
    let center = grid.cell_center(target);
    let k = to_target
        .cells
        .iter()
        .position(|&c| grid.cell_center(c).distance(center) <= reach)
        .unwrap_or(to_target.cells.len() - 1);
    let from = to_target.cells[k];
    let shared_cost = tree.cost_from(grid, m.start)? - tree.cost_from(grid, from)?;
    let mut cells = to_target.cells;
    cells.truncate(k);
    let walked = (cells, from, shared_cost, to_target.expansions);
    to_slot(grid, walked, slot, m, overlay, search, config)
}

/// How near the target a slot's unit leaves the shared way for its slot: the slot's distance
/// from the target plus [`SLOT_MARGIN`].
fn slot_reach(grid: &NavGrid, slot: Cell, target: Cell) -> f32 {
    grid.cell_center(slot).distance(grid.cell_center(target)) + SLOT_MARGIN
}

/// A slot member's path on its lane (see [`Lanes`]): onto its lane beside the reference path a
/// little ahead of where it stands, along it to where the reference enters the circle that holds
/// its slot, then its own A* to the slot. `None` where that cannot be walked.
fn lane_path(
    lanes: &mut GroupLanes,
    grid: &NavGrid,
    m: &Member,
    overlay: &[(Cell, CellOverlay)],
    search: &mut AStar,
    config: &SearchConfig,
) -> Option<Path> {
    let (lane, JobGoal::Slot { slot, target }) = (m.lane?, &m.job.goal) else {
        return None;
    };
    let guide = &lanes.guide;
    let (near, off) = guide.nearest(grid.cell_center(m.start))?;
    if off > guide.spread() + JOIN_REACH {
        return None;
    }
    let (reach, center) = (slot_reach(grid, *slot, *target), grid.cell_center(*target));
    let end = (near..guide.len())
        .find(|&i| guide.point(i).distance(center) <= reach)
        .unwrap_or(guide.len() - 1);
    let from = (near + JOIN_AHEAD).min(end);
    if from == end {
        return None;
    }
    let overlaid = &lanes.overlaid;
    let ok = |c: Cell| overlaid.is_empty() || !overlaid.contains(&c);
    let walk = lanes
        .walks
        .entry((lane.lateral.to_bits(), lane.rank.to_bits()))
        .or_insert_with(|| guide.walk_lane(grid, lane, ok))
        .as_ref()?;
    let (mut cells, cost) = walk.join(grid, m.start, (from, end), ok)?;
    let from = cells.pop()?;
    to_slot(
        grid,
        (cells, from, cost, 0),
        *slot,
        m,
        overlay,
        search,
        config,
    )
}

/// How far from the reference path a member may stand and still walk a lane, in tiles beyond
/// the group's half-width (farther, it follows the tree).
const JOIN_REACH: f32 = 4.0;
/// Cells of the reference path ahead of a member's nearest at which it joins its lane.
const JOIN_AHEAD: usize = 2;

/// The cells walked before the leg to the slot, the cell it starts from, the cost of the walk
/// up to that cell and the expansions spent on it.
type Walked = (Vec<Cell>, Cell, u64, u32);

/// The cells `walked` and the member's own A* from where they end to `slot`, as one path.
fn to_slot(
    grid: &NavGrid,
    (mut cells, from, cost, expansions): Walked,
    slot: Cell,
    m: &Member,
    overlay: &[(Cell, CellOverlay)],
    search: &mut AStar,
    config: &SearchConfig,
) -> Option<Path> {
    let config = config_to(config, from, slot, m.job.policy);
    search
        .begin_with_overlay(grid, from, slot, &config, overlay)
        .ok()?;
    let last = search.finish(grid).ok()?;
    cells.extend_from_slice(&last.cells);
    Some(Path {
        length: grid.cells_length(&cells),
        cost: cost + last.cost,
        expansions: expansions.saturating_add(last.expansions),
        goal: last.goal,
        goal_index: None,
        cells,
    })
}

/// A tree kept after its search, for later requests to the same goal.
struct CachedTree {
    key: MapClass,
    goal: Cell,
    tree: Box<GoalTree>,
    overlay: Vec<(Cell, CellOverlay)>,
    used: u64,
}

/// A map and a class: the grid a search runs on.
pub(super) type MapClass = (Entity, ClassId);

/// Finished trees by map, class and goal, least recently used dropped first; a tree whose grid changed
/// is never handed out. Dropped trees' memory is reused.
#[derive(Default)]
pub(super) struct TreeCache {
    trees: Vec<CachedTree>,
    /// Boxed, as trees in use are, so moving them in and out stays cheap.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<GoalTree>>,
}

/// Dropped trees kept for their memory.
const SPARE_TREES: usize = 2;

impl TreeCache {
    /// The cached tree from `goal` on `map`, if it was grown on grid version `version`, with its
    /// overlay (taken out: put it back when done).
    pub(super) fn take(
        &mut self,
        key: MapClass,
        goal: Cell,
        version: u64,
    ) -> Option<(Box<GoalTree>, Vec<(Cell, CellOverlay)>)> {
        let k = self
            .trees
            .iter()
            .position(|t| t.key == key && t.goal == goal)?;
        let t = self.trees.swap_remove(k);
        if t.tree.version() == Some(version) {
            Some((t.tree, t.overlay))
        } else {
            self.recycle(t.tree);
            None
        }
    }

    /// Whether a tree from `goal` on `key`'s grid grown on grid version `version` is kept.
    pub(super) fn has(&self, key: MapClass, goal: Cell, version: u64) -> bool {
        self.trees
            .iter()
            .any(|t| t.key == key && t.goal == goal && t.tree.version() == Some(version))
    }

    /// Keeps `tree` (at most `capacity` trees; the least recently used goes). A tree that
    /// followed edits ([`GoalTree::edited`]) is not kept: its paths are no longer the cheapest.
    pub(super) fn put(
        &mut self,
        key: MapClass,
        goal: Cell,
        tree: Box<GoalTree>,
        overlay: Vec<(Cell, CellOverlay)>,
        frame: u64,
        capacity: usize,
    ) {
        self.trees.retain(|t| !(t.key == key && t.goal == goal));
        if tree.edited() {
            self.recycle(tree);
            return;
        }
        self.trees.push(CachedTree {
            key,
            goal,
            tree,
            overlay,
            used: frame,
        });
        while self.trees.len() > capacity {
            let oldest = self
                .trees
                .iter()
                .enumerate()
                .min_by_key(|(_, t)| t.used)
                .map(|(k, _)| k)
                .expect("non-empty");
            let t = self.trees.swap_remove(oldest);
            self.recycle(t.tree);
        }
    }

    /// A tree to grow a new search in (recycled memory if there is some).
    pub(super) fn fresh(&mut self) -> Box<GoalTree> {
        self.spare.pop().unwrap_or_default()
    }

    /// Keeps a tree the size of `grid` ready, so the first shared search on it does not pay for
    /// the allocation.
    pub(super) fn reserve_for(&mut self, grid: &NavGrid) {
        while self.spare.len() < SPARE_TREES {
            self.spare.push(Box::default());
        }
        for tree in &mut self.spare {
            tree.reserve_for(grid);
        }
    }

    /// Takes back a tree's memory.
    pub(super) fn recycle(&mut self, tree: Box<GoalTree>) {
        if self.spare.len() < SPARE_TREES {
            self.spare.push(tree);
        }
    }

    /// Trees held.
    pub(super) fn len(&self) -> usize {
        self.trees.len()
    }
}
