//! Hierarchical search for long paths: a region map searched first, then short local searches.
//!
//! Lester ("two-tier search for long paths") and Pinter ("keep each A* search local; for far
//! goals use a region map searched first") both suggest it. The region map here is built
//! automatically, in the manner of HPA* (Botea, Müller and Schaeffer, 2004): the grid is cut into
//! square clusters; where two neighbouring clusters touch along a run of walkable cells, the run
//! gets a transition (one in its middle, or one at each end if it is long); transitions of one
//! cluster are linked by their exact cost inside the cluster. A long query connects its start and
//! goal to the transitions of their clusters, searches that small graph, and refines each leg with
//! an ordinary A* search a cluster or two long.
//!
//! Paths are valid and connect start and goal, but are not guaranteed shortest: the legs pass
//! through the chosen transition cells, so every join of two legs is searched again from half a
//! cluster before it to half a cluster after (this took the mean excess on the DAO maps from
//! 2.6-3.7 % to 0.3-1.3 %; see BENCHMARKS.md).
//! After grid edits the map is brought up to date cluster by cluster ([`RegionMap::update`]);
//! until then it is stale ([`RegionMap::is_current`]).
//!
//! A grid's links ([`Link`](super::Link)) are edges of the region map: each end of a link is a
//! node of its cluster (linked to the cluster's transitions like one), and each open crossing
//! the grid may take an edge between its ends at the crossing's cost. Opening or closing a link
//! changes only those edges.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use bevy::platform::collections::HashMap;

use super::cell::{BLOCKED, Cell};
use super::grid::{CornerRule, NavGrid, Topology};
use super::islands::RING;
use super::kernel::CellOverlay;
use super::path::{Path, PathError};
use super::search::{
    AStar, GoalPolicy, SearchConfig, SearchStep, find_path, resolve_ends, with_scratch,
};

/// Runs of touching walkable cells at least this long get a transition at each end.
const LONG_RUN: i32 = 6;

/// An automatically built region map of a [`NavGrid`]: clusters, their transitions, and the
/// costs between transitions (see the `core::hierarchy` module docs).
///
/// ```
/// use bevy_tilepath::core::{Cell, NavGrid, RegionMap, SearchConfig, find_path_hierarchical};
///
/// let mut grid = NavGrid::new(64, 64).unwrap();
/// for y in 0..60 {
///     grid.set_walkable(Cell::new(32, y), false).unwrap();
/// }
/// let regions = RegionMap::build(&grid, 16);
/// let config = SearchConfig::default();
/// let path = find_path_hierarchical(&grid, &regions, Cell::new(2, 2), Cell::new(60, 2), &config)
///     .unwrap();
/// assert_eq!(path.cells.first(), Some(&Cell::new(2, 2)));
/// assert_eq!(path.cells.last(), Some(&Cell::new(60, 2)));
/// assert!(path.cells.windows(2).all(|w| grid.can_step(w[0], w[1])));
/// ```
#[derive(Clone, Debug)]
pub struct RegionMap {
    cluster: i32,
    clusters_x: i32,
    clusters_y: i32,
    version: u64,
    /// Transition cells (a freed one is reused; see `uses`).
    nodes: Vec<Cell>,
    /// Outgoing edges of each node: (node, cost).
    edges: Vec<Vec<(u32, u64)>>,
    /// Nodes of each cluster.
    per_cluster: Vec<Vec<u32>>,
    by_cell: HashMap<Cell, u32>,
    /// How many transitions use each node (a cell can be picked on two borders); 0: free.
    uses: Vec<u32>,
    /// Free node ids.
    free: Vec<u32>,
    /// The transitions (pairs of facing nodes) of each border: cluster `k`'s right border at
    /// `2 k`, its upper border at `2 k + 1`.
    borders: Vec<Vec<(u32, u32)>>,
    /// The walkable ends of the grid's links, each a node (sorted).
    link_ends: Vec<Cell>,
    /// The crossings the grid may take now, as edges between the nodes of their ends: (entry
    /// node, exit node, cost), sorted.
    crossings: Vec<(u32, u32, u64)>,
}

/// A cluster's right border, or its upper one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Right,
    Up,
}

impl RegionMap {
    /// Builds the region map of `grid` with square clusters `cluster_size` cells wide (at least
    /// 4; 16 suits most maps).
    pub fn build(grid: &NavGrid, cluster_size: u32) -> Self {
        let c = cluster_size.max(4) as i32;
        let (w, h) = (grid.width() as i32, grid.height() as i32);
        let clusters_x = (w + c - 1) / c;
        let clusters_y = (h + c - 1) / c;
        let count = (clusters_x * clusters_y) as usize;
        let mut map = RegionMap {
            cluster: c,
            clusters_x,
            clusters_y,
            version: grid.version(),
            nodes: Vec::new(),
            edges: Vec::new(),
            per_cluster: vec![Vec::new(); count],
            by_cell: HashMap::new(),
            uses: Vec::new(),
            free: Vec::new(),
            borders: vec![Vec::new(); 2 * count],
            link_ends: Vec::new(),
            crossings: Vec::new(),
        };
        for k in 0..count {
            for side in [Side::Right, Side::Up] {
                map.set_border(grid, k, side);
            }
        }
        map.set_link_ends(grid);
        for k in 0..count {
            map.link_cluster(grid, k);
        }
        map.set_crossings(grid);
        map
    }

    /// Brings the map up to date after edits of `changed` cells (walkability or terrain), in
    /// the clusters they touch only: their borders' transitions are found again, and the costs
    /// inside those clusters and their neighbours. Gives the same map as [`RegionMap::build`]
    /// on the edited grid (up to node numbering), at a fraction of its cost on a large map.
    /// Links are followed whatever the cells given: after opening or closing a link, `changed`
    /// may be empty.
    pub fn update(&mut self, grid: &NavGrid, changed: impl IntoIterator<Item = Cell>) {
        let mut borders: Vec<(usize, Side)> = Vec::new();
        let mut touched: Vec<usize> = Vec::new();
        for cell in changed {
            if !grid.in_bounds(cell) {
                continue;
            }
            let (cx, cy) = (cell.x / self.cluster, cell.y / self.cluster);
            let k = self.cluster_index(cx, cy);
            touched.push(k);
            borders.extend([(k, Side::Right), (k, Side::Up)]);
            if cx > 0 {
                borders.push((self.cluster_index(cx - 1, cy), Side::Right));
            }
            if cy > 0 {
                borders.push((self.cluster_index(cx, cy - 1), Side::Up));
            }
        }
        borders.sort_unstable_by_key(|&(k, side)| (k, side == Side::Up));
        borders.dedup();
        // The edited clusters' links, and those of both sides of a border whose transitions
        // moved.
        let mut clusters: Vec<usize> = touched;
        for &(k, side) in &borders {
            if self.set_border(grid, k, side) {
                clusters.push(k);
                clusters.extend(self.across(k, side));
            }
        }
        clusters.extend(self.set_link_ends(grid));
        clusters.sort_unstable();
        clusters.dedup();
        for k in clusters {
            self.link_cluster(grid, k);
        }
        self.set_crossings(grid);
        self.version = grid.version();
    }

    /// Makes the walkable ends of the grid's links nodes (and those no longer such, not);
    /// returns the clusters whose nodes changed.
    fn set_link_ends(&mut self, grid: &NavGrid) -> Vec<usize> {
        let mut ends: Vec<Cell> = grid
            .links()
            .flat_map(|(_, l)| [l.from, l.to])
            .filter(|&c| grid.is_walkable(c))
            .collect();
        ends.sort_unstable_by_key(|c| (c.y, c.x));
        ends.dedup();
        if ends == self.link_ends {
            return Vec::new();
        }
        let old = std::mem::take(&mut self.link_ends);
        // Both sorted: membership by binary search.
        let key = |c: &Cell| (c.y, c.x);
        let absent = |from: &[Cell], c: &Cell| from.binary_search_by_key(&key(c), key).is_err();
        let gone: Vec<Cell> = old.iter().filter(|c| absent(&ends, c)).copied().collect();
        let new: Vec<Cell> = ends.iter().filter(|c| absent(&old, c)).copied().collect();
        for &cell in &gone {
            let id = self.by_cell[&cell];
            self.release(id);
        }
        for &cell in &new {
            self.node(cell);
        }
        self.link_ends = ends;
        gone.iter()
            .chain(&new)
            .map(|&c| self.cluster_of(c))
            .collect()
    }

    /// The edges of the crossings the grid may take now (open, open to the keys it holds,
    /// between walkable ends), at their cost.
    fn set_crossings(&mut self, grid: &NavGrid) {
        self.crossings.clear();
        for (_, link) in grid.links() {
            for (a, b) in link.crossings() {
                if grid.crossing(a, b).is_none() {
                    continue;
                }
                let (Some(&na), Some(&nb), Some(cost)) = (
                    self.by_cell.get(&a),
                    self.by_cell.get(&b),
                    grid.step_cost(a, b),
                ) else {
                    continue;
                };
                self.crossings.push((na, nb, cost));
            }
        }
        self.crossings.sort_unstable();
        self.crossings.dedup_by_key(|&mut (a, b, _)| (a, b));
    }

    /// The crossings' edges out of node `id`, as (node, cost).
    fn crossings_from(&self, id: u32) -> impl Iterator<Item = (u32, u64)> + '_ {
        let first = self.crossings.partition_point(|&(a, _, _)| a < id);
        self.crossings[first..]
            .iter()
            .take_while(move |&&(a, _, _)| a == id)
            .map(|&(_, b, cost)| (b, cost))
    }

    /// Whether the map was built from `grid` as it is now (a grid edit makes it stale).
    pub fn is_current(&self, grid: &NavGrid) -> bool {
        self.version == grid.version()
    }

    /// Number of transition cells.
    pub fn node_count(&self) -> usize {
        self.nodes.len() - self.free.len()
    }

    /// Every edge of the map, as (from cell, to cell, cost), sorted: between the two cells of a
    /// transition, between the transitions of one cluster, and across the grid's open links
    /// (for drawing the map, or for comparing two maps).
    pub fn links(&self) -> Vec<(Cell, Cell, u64)> {
        let mut out: Vec<(Cell, Cell, u64)> = Vec::new();
        for (a, edges) in self.edges.iter().enumerate() {
            if self.uses[a] == 0 {
                continue;
            }
            for &(b, cost) in edges {
                out.push((self.nodes[a], self.nodes[b as usize], cost));
            }
        }
        for &(a, b, cost) in &self.crossings {
            out.push((self.nodes[a as usize], self.nodes[b as usize], cost));
        }
        out.sort_unstable_by_key(|&(a, b, c)| (a.x, a.y, b.x, b.y, c));
        out
    }

    /// Side of a cluster in cells.
    pub fn cluster_size(&self) -> u32 {
        self.cluster as u32
    }

    fn cluster_of(&self, cell: Cell) -> usize {
        ((cell.y / self.cluster) * self.clusters_x + cell.x / self.cluster) as usize
    }

    fn cluster_index(&self, cx: i32, cy: i32) -> usize {
        (cy * self.clusters_x + cx) as usize
    }

    /// The cluster on the other side of cluster `k`'s border `side`, if any.
    fn across(&self, k: usize, side: Side) -> Option<usize> {
        let (cx, cy) = (k as i32 % self.clusters_x, k as i32 / self.clusters_x);
        match side {
            Side::Right => (cx + 1 < self.clusters_x).then(|| k + 1),
            Side::Up => (cy + 1 < self.clusters_y).then(|| k + self.clusters_x as usize),
        }
    }

    /// Finds cluster `k`'s border `side` again: where its transitions moved, the old ones go
    /// and the present ones come; returns whether they moved (else only the costs across the
    /// border are refreshed, and the clusters' links stand).
    fn set_border(&mut self, grid: &NavGrid, k: usize, side: Side) -> bool {
        let slot = 2 * k + usize::from(side == Side::Up);
        let picks = match self.across(k, side) {
            Some(_) => transitions(grid, &self.border_cells(grid, k, side)),
            None => Vec::new(),
        };
        let nodes = &self.nodes;
        let same = self.borders[slot].len() == picks.len()
            && self.borders[slot]
                .iter()
                .zip(&picks)
                .all(|(&(a, b), &pick)| (nodes[a as usize], nodes[b as usize]) == pick);
        for (a, b) in std::mem::take(&mut self.borders[slot]) {
            self.edges[a as usize].retain(|&(n, _)| n != b);
            self.edges[b as usize].retain(|&(n, _)| n != a);
            if !same {
                self.release(a);
                self.release(b);
            }
        }
        let mut linked = Vec::with_capacity(picks.len());
        for (a, b) in picks {
            let (na, nb) = if same {
                (self.by_cell[&a], self.by_cell[&b])
            } else {
                (self.node(a), self.node(b))
            };
            // The step itself: a link between the two cells is an edge of its own.
            let ab = step_over_border(grid, a, b);
            let ba = step_over_border(grid, b, a);
            self.edges[na as usize].push((nb, ab));
            self.edges[nb as usize].push((na, ba));
            linked.push((na, nb));
        }
        self.borders[slot] = linked;
        !same
    }

    /// The facing cells of cluster `k`'s border `side`, in order.
    fn border_cells(&self, grid: &NavGrid, k: usize, side: Side) -> Vec<(Cell, Cell)> {
        let c = self.cluster;
        let (w, h) = (grid.width() as i32, grid.height() as i32);
        let (x0, y0) = (
            (k as i32 % self.clusters_x) * c,
            (k as i32 / self.clusters_x) * c,
        );
        match side {
            Side::Right => (y0..(y0 + c).min(h))
                .map(|y| (Cell::new(x0 + c - 1, y), Cell::new(x0 + c, y)))
                .collect(),
            Side::Up => (x0..(x0 + c).min(w))
                .map(|x| (Cell::new(x, y0 + c - 1), Cell::new(x, y0 + c)))
                .collect(),
        }
    }

    /// The costs between cluster `k`'s transitions, found inside the cluster, replacing the old.
    fn link_cluster(&mut self, grid: &NavGrid, k: usize) {
        let members = self.per_cluster[k].clone();
        for &a in &members {
            let nodes = &self.nodes;
            let cluster = self.cluster;
            let origin = nodes[a as usize] / cluster;
            self.edges[a as usize].retain(|&(n, _)| nodes[n as usize] / cluster != origin);
            let costs = self.costs_in_cluster(grid, self.nodes[a as usize], None, false, &mut 0);
            for &b in &members {
                if a != b
                    && let Some(&cost) = costs.get(&self.nodes[b as usize])
                {
                    self.edges[a as usize].push((b, cost));
                }
            }
        }
    }

    /// The node of transition cell `cell`, made (or reused) if it has none, counted once more.
    fn node(&mut self, cell: Cell) -> u32 {
        if let Some(&id) = self.by_cell.get(&cell) {
            self.uses[id as usize] += 1;
            return id;
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = cell;
                id
            }
            None => {
                self.nodes.push(cell);
                self.edges.push(Vec::new());
                self.uses.push(0);
                self.nodes.len() as u32 - 1
            }
        };
        self.uses[id as usize] = 1;
        self.by_cell.insert(cell, id);
        let k = self.cluster_of(cell);
        self.per_cluster[k].push(id);
        id
    }

    /// One use of node `id` less; freed (its edges gone) at none.
    fn release(&mut self, id: u32) {
        let uses = &mut self.uses[id as usize];
        *uses -= 1;
        if *uses > 0 {
            return;
        }
        let cell = self.nodes[id as usize];
        self.by_cell.remove(&cell);
        let k = self.cluster_of(cell);
        self.per_cluster[k].retain(|&n| n != id);
        // Edges into it come only from its own cluster and from its pair partners (their
        // transitions were removed with it): none may point at the id once it is reused.
        for &m in &self.per_cluster[k] {
            self.edges[m as usize].retain(|&(n, _)| n != id);
        }
        self.edges[id as usize].clear();
        self.free.push(id);
    }

    /// Dijkstra from `from` without leaving its cluster: cost from `from` to every transition of
    /// the cluster and to `extra`, if given and inside (with `reverse`: the costs *to* `from`).
    fn costs_in_cluster(
        &self,
        grid: &NavGrid,
        from: Cell,
        extra: Option<Cell>,
        reverse: bool,
        pops: &mut u64,
    ) -> HashMap<Cell, u64> {
        let c = self.cluster;
        let origin = Cell::new(from.x / c * c, from.y / c * c);
        let inside = |p: Cell| {
            p.x >= origin.x && p.y >= origin.y && p.x < origin.x + c && p.y < origin.y + c
        };
        let local = |p: Cell| ((p.y - origin.y) * c + (p.x - origin.x)) as usize;
        let mut dist = vec![u64::MAX; (c * c) as usize];
        let mut heap = BinaryHeap::new();
        dist[local(from)] = 0;
        heap.push(Reverse((0u64, from.x, from.y)));
        let k = self.cluster_of(from);
        let mut target = vec![false; (c * c) as usize];
        let cells = self.per_cluster[k].iter().map(|&n| self.nodes[n as usize]);
        for cell in cells.chain(extra.filter(|&e| inside(e))) {
            target[local(cell)] = true;
        }
        let mut wanted = target.iter().filter(|&&t| t).count();
        let mut out = HashMap::new();
        let steps = Steps::of(grid);
        while let Some(Reverse((d, x, y))) = heap.pop() {
            *pops += 1;
            let cell = Cell::new(x, y);
            if d > dist[local(cell)] {
                continue;
            }
            if std::mem::take(&mut target[local(cell)]) {
                out.insert(cell, d);
                wanted -= 1;
                if wanted == 0 {
                    break;
                }
            }
            let Ok(i) = grid.index(cell) else {
                continue;
            };
            for (dx, dy) in RING {
                let next = Cell::new(x + dx, y + dy);
                if !inside(next) {
                    continue;
                }
                let step = steps.cost(grid, (cell, i), (dx, dy), reverse);
                if let Some(step) = step {
                    let nd = d + step;
                    if nd < dist[local(next)] {
                        dist[local(next)] = nd;
                        heap.push(Reverse((nd, next.x, next.y)));
                    }
                }
            }
        }
        out
    }

    /// The sub-destinations from `start` to `goal`: `start`, the transition cells of the
    /// cheapest route through the region map, and `goal`. `None` when the region map has no
    /// route (the goal may still be reachable through a way the clusters' borders miss, such as
    /// a diagonal squeeze at a cluster corner: search the whole grid then).
    pub fn route(&self, grid: &NavGrid, start: Cell, goal: Cell) -> Option<Vec<Cell>> {
        self.route_counted(grid, start, goal, &mut 0)
    }

    /// [`RegionMap::route`], adding the heap pops of its three searches to `pops`.
    fn route_counted(
        &self,
        grid: &NavGrid,
        start: Cell,
        goal: Cell,
        pops: &mut u64,
    ) -> Option<Vec<Cell>> {
        let n = self.nodes.len();
        let (s, g) = (n as u32, n as u32 + 1);
        let cell_of = |id: u32| match id {
            id if id == s => start,
            id if id == g => goal,
            id => self.nodes[id as usize],
        };
        // Temporary edges: start to its cluster's transitions (and straight to the goal when they
        // share a cluster), the goal's cluster's transitions to the goal.
        let from_start = self.costs_in_cluster(grid, start, Some(goal), false, pops);
        let mut start_edges: Vec<(u32, u64)> = self.per_cluster[self.cluster_of(start)]
            .iter()
            .filter_map(|&m| from_start.get(&self.nodes[m as usize]).map(|&d| (m, d)))
            .collect();
        if let Some(&d) = from_start.get(&goal) {
            start_edges.push((g, d));
        }
        let to_goal = self.costs_in_cluster(grid, goal, None, true, pops);
        let into_goal: HashMap<u32, u64> = self.per_cluster[self.cluster_of(goal)]
            .iter()
            .filter_map(|&m| to_goal.get(&self.nodes[m as usize]).map(|&d| (m, d)))
            .collect();

        // The search's own estimate: lowered to what a path through a link could cost.
        let h = grid.cost_bound_to(goal);
        // Best cost so far and parent of every node (start and goal last).
        let mut best = vec![(u64::MAX, u32::MAX); n + 2];
        let mut heap = BinaryHeap::new();
        best[s as usize] = (0, s);
        heap.push(Reverse((h(start), 0u64, s)));
        while let Some(Reverse((_, d, id))) = heap.pop() {
            *pops += 1;
            if d > best[id as usize].0 {
                continue;
            }
            if id == g {
                let mut route = vec![goal];
                let mut at = g;
                while at != s {
                    at = best[at as usize].1;
                    route.push(cell_of(at));
                }
                route.reverse();
                route.dedup();
                return Some(route);
            }
            let edges: &[(u32, u64)] = if id == s {
                &start_edges
            } else {
                &self.edges[id as usize]
            };
            let to_goal = into_goal.get(&id).map(|&c| (g, c));
            let crossings = self.crossings_from(id);
            for (next, cost) in edges.iter().copied().chain(to_goal).chain(crossings) {
                let nd = d + cost;
                if nd < best[next as usize].0 {
                    best[next as usize] = (nd, id);
                    heap.push(Reverse((nd + h(cell_of(next)), nd, next)));
                }
            }
        }
        None
    }
}

/// The cost of the step from `a` to its neighbour `b` across a border (an open pair of a
/// transition): the move's, not a link's that may join the two cells too.
fn step_over_border(grid: &NavGrid, a: Cell, b: Cell) -> u64 {
    let i = grid.index(a).expect("a transition cell is on the grid");
    let d = b - a;
    Steps::of(grid)
        .cost(grid, (a, i), (d.x, d.y), false)
        .expect("open pair")
}

/// The transitions of a border (pairs of facing cells, in order): its runs where both sides are
/// walkable, each with one facing pair in its middle, or one at each end if it is long.
fn transitions(grid: &NavGrid, pairs: &[(Cell, Cell)]) -> Vec<(Cell, Cell)> {
    let open = |&(a, b): &(Cell, Cell)| grid.can_step(a, b) && grid.can_step(b, a);
    let mut picks = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        if !open(&pairs[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < pairs.len() && open(&pairs[i]) {
            i += 1;
        }
        let run = &pairs[start..i];
        if (run.len() as i32) < LONG_RUN {
            picks.push(run[run.len() / 2]);
        } else {
            picks.extend([run[0], run[run.len() - 1]]);
        }
    }
    picks
}

/// A path from `start` to `goal` through the region map: the route's legs are searched one by
/// one and joined, and every join searched again across it (half a cluster each way; see
/// [`HierarchicalSearch`]). Falls back to one search of the whole grid when start and goal are
/// at most two clusters apart (short paths gain nothing) or the region map has no route. The
/// result's `expansions` count every search made, so it compares with a flat search's.
///
/// Errors are those of [`find_path`]; a stale map (see [`RegionMap::is_current`]) gives
/// [`PathError::NoPath`] rather than a path through cells that changed.
pub fn find_path_hierarchical(
    grid: &NavGrid,
    regions: &RegionMap,
    start: Cell,
    goal: Cell,
    config: &SearchConfig,
) -> Result<Path, PathError> {
    let Some(mut hierarchical) = HierarchicalSearch::begin(grid, regions, start, goal, config)?
    else {
        return find_path(grid, start, goal, config);
    };
    with_scratch(|search| {
        loop {
            match hierarchical.step(grid, search, u32::MAX) {
                SearchStep::Pending => {}
                SearchStep::Found(path) => return Ok(path),
                SearchStep::Failed(e) => return Err(e),
            }
        }
    })
}

/// A search through a [`RegionMap`] in progress, resumable a few hundred expansions at a time
/// like [`AStar::step`] (the plugin's queue runs it in slices within the frame's budget): the
/// route through the region map is found when it begins; each step then advances the A* of
/// one leg of the route (from one transition cell to the next), and once every leg is joined,
/// the searches across the joins (from half a cluster before a join to half a cluster after,
/// keeping the new stretch where it is cheaper: the legs must pass through the transition
/// cells, the best path rarely does).
///
/// Every search runs with the overlay given at [`HierarchicalSearch::begin_with_overlay`]
/// (claims, stopped units); the route itself is planned on the grid alone. A leg that finds no
/// path under the overlay fails the whole search with [`PathError::NoPath`] (search the whole
/// grid then), as does a grid edit while it runs.
///
/// ```
/// use bevy_tilepath::core::{AStar, Cell, HierarchicalSearch, NavGrid, RegionMap, SearchConfig, SearchStep};
///
/// let grid = NavGrid::new(128, 128).unwrap();
/// let regions = RegionMap::build(&grid, 16);
/// let config = SearchConfig::default();
/// let (start, goal) = (Cell::new(1, 1), Cell::new(120, 100));
/// let mut search = AStar::new();
/// let mut hierarchical = HierarchicalSearch::begin(&grid, &regions, start, goal, &config)
///     .unwrap()
///     .expect("far apart: a route through the region map");
/// let path = loop {
///     match hierarchical.step(&grid, &mut search, 256) {
///         SearchStep::Pending => continue, // next frame
///         SearchStep::Found(path) => break path,
///         SearchStep::Failed(e) => panic!("{e:?}"),
///     }
/// };
/// assert_eq!(path.cells.last(), Some(&goal));
/// ```
#[derive(Clone, Debug)]
pub struct HierarchicalSearch {
    /// Start, the route's transition cells, goal.
    route: Vec<Cell>,
    /// The leg being searched (`route[leg]` to `route[leg + 1]`), or the route's length once
    /// every leg is joined.
    leg: usize,
    /// Joins of the legs (indices into `path.cells`) still to be searched across, the last
    /// one first.
    joins: Vec<usize>,
    /// The join being searched across: the stretch `a..=b` of `path.cells`.
    across: Option<(usize, usize)>,
    /// Whether the scratch holds the leg's or the join's search.
    searching: bool,
    path: Path,
    /// Expansions of finished searches.
    expansions: u64,
    /// Expansions of the search in progress before this step.
    leg_expansions: u64,
    /// Heap pops of the route it follows.
    route_pops: u64,
    reach: usize,
    config: SearchConfig,
    overlay: Vec<(Cell, CellOverlay)>,
    /// The overlay's penalty of each cell (the highest where a cell is listed twice).
    extra: HashMap<Cell, u32>,
    version: u64,
}

impl HierarchicalSearch {
    /// Begins a search from `start` to `goal` through `regions` (which must be current: see
    /// [`RegionMap::is_current`]). `Ok(None)` when a flat search serves the query better or
    /// alone: start and goal at most two clusters apart, in one cluster, the region map has no
    /// route between them, or the grid is hexagonal (region maps know square moves only). Errors are [`AStar::begin`]'s (the goal policy is applied here);
    /// a stale map gives [`PathError::NoPath`].
    pub fn begin(
        grid: &NavGrid,
        regions: &RegionMap,
        start: Cell,
        goal: Cell,
        config: &SearchConfig,
    ) -> Result<Option<Self>, PathError> {
        Self::begin_with_overlay(grid, regions, start, goal, config, &[])
    }

    /// Like [`HierarchicalSearch::begin`], every search made with per-search extra costs or
    /// blocks on some cells (see [`AStar::begin_with_overlay`]).
    pub fn begin_with_overlay(
        grid: &NavGrid,
        regions: &RegionMap,
        start: Cell,
        goal: Cell,
        config: &SearchConfig,
        overlay: &[(Cell, CellOverlay)],
    ) -> Result<Option<Self>, PathError> {
        if !regions.is_current(grid) {
            return Err(PathError::NoPath);
        }
        let (_, goal) = resolve_ends(grid, start, goal, config.goal_policy)?;
        let apart = (goal - start).abs().max_element();
        // Region maps know square moves only: a hexagonal grid is searched flat.
        if grid.is_hex()
            || apart <= 2 * regions.cluster
            || regions.cluster_of(start) == regions.cluster_of(goal)
        {
            return Ok(None);
        }
        let mut pops = 0;
        let Some(route) = regions.route_counted(grid, start, goal, &mut pops) else {
            return Ok(None);
        };
        Ok(Some(HierarchicalSearch {
            leg: 0,
            joins: Vec::with_capacity(route.len()),
            route,
            across: None,
            searching: false,
            path: Path {
                cells: vec![start],
                cost: 0,
                length: 0.0,
                expansions: 0,
                goal,
                goal_index: None,
            },
            expansions: 0,
            leg_expansions: 0,
            route_pops: pops,
            reach: regions.cluster as usize / 2,
            // The ends are resolved: every leg ends on a walkable cell of the start's island.
            // Legs are A*: jump point search scans far past a leg's short way in open ground
            // (2,000 random requests on 512 x 512 took 4 times the frames with jumping legs).
            config: SearchConfig {
                goal_policy: GoalPolicy::Fail,
                jump_points: false,
                ..*config
            },
            overlay: overlay.to_vec(),
            extra: overlay
                .iter()
                .fold(HashMap::new(), |mut extra, &(cell, o)| {
                    if let CellOverlay::Penalty(p) = o {
                        let e = extra.entry(cell).or_insert(0);
                        *e = (*e).max(p);
                    }
                    extra
                }),
            version: grid.version(),
        }))
    }

    /// Heap pops of the route through the region map found when it began (not counted in
    /// [`HierarchicalSearch::expansions`], which counts the grid searches of its legs).
    pub fn route_pops(&self) -> u64 {
        self.route_pops
    }

    /// Expansions of every search made so far.
    pub fn expansions(&self) -> u64 {
        self.expansions + self.leg_expansions
    }

    /// Advances by at most about `max_expansions` node expansions, searching with `search`'s
    /// scratch space (which must not be used for anything else until this search ends).
    /// [`SearchStep::Found`] gives the whole path, its `expansions` counting every search made and
    /// its `cost` what one search would count along it (terrain, and the overlay's penalties
    /// on every cell but the goal).
    /// A grid edit since it began fails it with [`PathError::NoPath`] (its route may be gone).
    pub fn step(&mut self, grid: &NavGrid, search: &mut AStar, max_expansions: u32) -> SearchStep {
        if grid.version() != self.version {
            return SearchStep::Failed(PathError::NoPath);
        }
        let mut left = max_expansions.max(1) as u64;
        while left > 0 {
            if !self.searching {
                let Some((from, to)) = self.next_search() else {
                    return SearchStep::Found(self.finish(grid));
                };
                if let Err(e) =
                    search.begin_with_overlay(grid, from, to, &self.config, &self.overlay)
                {
                    return SearchStep::Failed(e);
                }
                self.searching = true;
                self.leg_expansions = 0;
            }
            let step = search.step(grid, left.min(u32::MAX as u64) as u32);
            let done = match &step {
                SearchStep::Found(p) => p.expansions as u64,
                _ => search.expansions(),
            };
            left = left.saturating_sub(done.saturating_sub(self.leg_expansions).max(1));
            self.leg_expansions = done;
            match step {
                SearchStep::Pending => {}
                SearchStep::Found(part) => {
                    self.expansions += std::mem::take(&mut self.leg_expansions);
                    self.searching = false;
                    self.found(grid, part);
                }
                SearchStep::Failed(e) => return SearchStep::Failed(e),
            }
        }
        SearchStep::Pending
    }

    /// The ends of the next search to make: the next leg, or the next join to search across.
    fn next_search(&mut self) -> Option<(Cell, Cell)> {
        if self.leg + 1 < self.route.len() {
            return Some((self.route[self.leg], self.route[self.leg + 1]));
        }
        let j = self.joins.pop()?;
        let (a, b) = (
            j.saturating_sub(self.reach),
            (j + self.reach).min(self.path.cells.len() - 1),
        );
        self.across = Some((a, b));
        Some((self.path.cells[a], self.path.cells[b]))
    }

    /// A leg or a join's search found `part`.
    fn found(&mut self, grid: &NavGrid, part: Path) {
        match self.across.take() {
            None => {
                self.path.cells.extend_from_slice(&part.cells[1..]);
                self.leg += 1;
                // The join at the end of this leg, unless it is the goal. Joins are taken last
                // first, so the indices of the earlier ones still hold.
                if self.leg + 1 < self.route.len() {
                    self.joins.push(self.path.cells.len() - 1);
                }
            }
            Some((a, b)) => {
                if part.cost < self.stretch_cost(grid, &self.path.cells[a..=b]) {
                    self.path.cells.splice(a..=b, part.cells);
                }
            }
        }
    }

    /// The cost of walking `cells` as one search from its first cell to its last counts it:
    /// terrain, and the overlay's penalty on every cell entered but the last.
    fn stretch_cost(&self, grid: &NavGrid, cells: &[Cell]) -> u64 {
        let last = cells.len().saturating_sub(1);
        cells
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                let extra = if i + 1 < last {
                    self.extra.get(&w[1]).copied().unwrap_or(0) as u64
                } else {
                    0
                };
                grid.step_cost(w[0], w[1]).unwrap_or(u64::MAX / 4) + extra
            })
            .sum()
    }

    /// The whole path (the search is spent).
    fn finish(&mut self, grid: &NavGrid) -> Path {
        let cells = std::mem::take(&mut self.path.cells);
        let mut path = Path {
            cells,
            ..self.path.clone()
        };
        path.cost = self.stretch_cost(grid, &path.cells);
        path.length = grid.cells_length(&path.cells);
        path.expansions = self.expansions.min(u32::MAX as u64) as u32;
        path
    }
}

/// Step costs between neighbouring cells read straight off a square grid's padded arrays:
/// the same answers as [`NavGrid::step_cost`] (the grid's padding stands in for its bounds
/// checks), at a fraction of its cost in the region map's cluster searches, which make some
/// eight of them per cell (measured: `NavGrid::can_step` 6.5 % of a busy game's instructions,
/// nearly all of them here, as its region map follows edits).
struct Steps<'a> {
    terrain: &'a [u8],
    penalty: &'a [u32],
    stride: isize,
    straight: u64,
    diagonal: u64,
    /// Diagonal steps allowed (eight-way square grid), and past one blocked corner.
    diagonals: bool,
    cut: bool,
    /// Hexagonal grid: [`NavGrid::step_cost`] itself.
    hex: bool,
}

impl<'a> Steps<'a> {
    fn of(grid: &'a NavGrid) -> Self {
        let rules = grid.rules();
        Steps {
            terrain: grid.terrain_raw(),
            penalty: grid.penalty_raw(),
            stride: grid.stride() as isize,
            straight: rules.costs.straight as u64,
            diagonal: rules.costs.diagonal as u64,
            diagonals: rules.topology == Topology::Eight,
            cut: rules.corner_rule == CornerRule::AllowCutting,
            hex: rules.topology == Topology::Hex,
        }
    }

    /// The cost of the step from `cell` (padded index `i`, in bounds) to its neighbour at
    /// `(dx, dy)`, or of the step back from it if `reverse`; `None` if the move rules forbid it.
    #[inline]
    fn cost(
        &self,
        grid: &NavGrid,
        (cell, i): (Cell, usize),
        (dx, dy): (i32, i32),
        reverse: bool,
    ) -> Option<u64> {
        if self.hex {
            let next = Cell::new(cell.x + dx, cell.y + dy);
            return if reverse {
                grid.step_cost(next, cell)
            } else {
                grid.step_cost(cell, next)
            };
        }
        let at = |dx: i32, dy: i32| (i as isize + dy as isize * self.stride + dx as isize) as usize;
        let j = at(dx, dy);
        if self.terrain[i] == BLOCKED || self.terrain[j] == BLOCKED {
            return None;
        }
        let diagonal = dx != 0 && dy != 0;
        if diagonal {
            let (a, b) = (
                self.terrain[at(dx, 0)] != BLOCKED,
                self.terrain[at(0, dy)] != BLOCKED,
            );
            if !self.diagonals || !(if self.cut { a || b } else { a && b }) {
                return None;
            }
        }
        let entered = if reverse { i } else { j };
        let base = if diagonal {
            self.diagonal
        } else {
            self.straight
        };
        Some(base * self.terrain[entered] as u64 + self.penalty[entered] as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::CostModel;
    use crate::core::MoveRules;

    /// [`Steps::cost`] gives [`NavGrid::step_cost`]'s answers, both ways, under every move
    /// rule, with terrain, penalties and walls up to the grid's edges.
    #[test]
    fn steps_read_off_the_arrays_cost_what_step_cost_says() {
        let mut next = crate::core::test_rng::below(0x9e37_79b9_u32);
        let topologies = [Topology::Eight, Topology::Four, Topology::Hex];
        let corners = [CornerRule::NoCutting, CornerRule::AllowCutting];
        let mut compared = 0;
        for topology in topologies {
            for corner_rule in corners {
                let rules = MoveRules {
                    topology,
                    corner_rule,
                    costs: CostModel::LESTER,
                };
                let mut grid = NavGrid::with_rules(9, 7, rules).unwrap();
                for _ in 0..25 {
                    let c = Cell::new(next(9) as i32, next(7) as i32);
                    grid.set_terrain(c, next(5) as u8).unwrap();
                    let p = Cell::new(next(9) as i32, next(7) as i32);
                    grid.set_penalty(p, next(40)).unwrap();
                }
                let steps = Steps::of(&grid);
                for cell in grid.cells() {
                    let i = grid.index(cell).unwrap();
                    for (dx, dy) in RING {
                        let n = Cell::new(cell.x + dx, cell.y + dy);
                        for reverse in [false, true] {
                            let want = if reverse {
                                grid.step_cost(n, cell)
                            } else {
                                grid.step_cost(cell, n)
                            };
                            let got = steps.cost(&grid, (cell, i), (dx, dy), reverse);
                            assert_eq!(got, want, "{cell:?} {dx} {dy} {reverse} {rules:?}");
                            compared += usize::from(want.is_some());
                        }
                    }
                }
            }
        }
        assert!(compared > 1000, "{compared}");
    }
}
