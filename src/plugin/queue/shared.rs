//! Shared searches: waiting requests to one goal cell (or one group target) on one map are served
//! by one backward search, a [`GoalTree`], grown until every member's start is settled; each
//! member's path is read off the tree (a group slot's last tiles are its own short A*).
//! Finished trees are kept in a small cache ([`TreeCache`]) for later requests to the same goal
//! while the grid is unchanged.
//!
//! Claims are a per-search overlay: a shared search takes the claims and stopped cells of units
//! that are *not* its members, within the claim radius of the box of its members' starts. The
//! members' own spread comes from their slots and from movement. A tree reused from the cache
//! keeps the overlay it was grown with.

use bevy::prelude::*;

use crate::core::{AStar, Cell, CellOverlay, GoalTree, NavGrid, Path, SearchConfig, TreeStep};
use crate::plugin::classes::ClassId;
use crate::plugin::outcomes::SearchKind;

use super::job::{Job, JobGoal, SearchResult};

/// A unit served by a shared search.
pub(super) struct Member {
    pub(super) job: Job,
    pub(super) start: Cell,
    pub(super) radius: f32,
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

    /// Node expansions so far.
    pub(super) fn expansions(&self) -> u64 {
        self.tree.expansions()
    }

    /// One step: grow the tree by at most `max_pops` heap pops until every member's start is
    /// settled (a tree the grid changed under starts again), then serve one member (members
    /// `keep` rejects are dropped: their requests ended meanwhile). `search` runs a slot's last
    /// tiles.
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
            self.grown = false;
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
        while let Some(m) = self.members.pop() {
            if !keep(&m.job) {
                continue;
            }
            return match member_path(&self.tree, grid, &m, &self.overlay, search, config) {
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
    let center = grid.cell_center(target);
    let reach = grid.cell_center(slot).distance(center) + SLOT_MARGIN;
    let k = to_target
        .cells
        .iter()
        .position(|&c| grid.cell_center(c).distance(center) <= reach)
        .unwrap_or(to_target.cells.len() - 1);
    let from = to_target.cells[k];
    let config = SearchConfig {
        goal_policy: m.job.policy,
        ..*config
    };
    search
        .begin_with_overlay(grid, from, slot, &config, overlay)
        .ok()?;
    let last = search.finish(grid).ok()?;
    let shared_cost = tree.cost_from(grid, m.start)? - tree.cost_from(grid, from)?;
    let mut cells = to_target.cells;
    cells.truncate(k);
    cells.extend_from_slice(&last.cells);
    Some(Path {
        length: grid.cells_length(&cells),
        cost: shared_cost + last.cost,
        expansions: to_target.expansions.saturating_add(last.expansions),
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

    /// Keeps `tree` (at most `capacity` trees; the least recently used goes).
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
