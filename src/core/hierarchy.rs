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

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::grid::{Cell, NavGrid};
use super::heuristic::{Heuristic, WEIGHT_ONE};
use super::islands::RING;
use super::path::{Path, PathError, cells_length};
use super::search::{SearchConfig, find_path, resolve_ends};

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
        };
        for k in 0..count {
            for side in [Side::Right, Side::Up] {
                map.set_border(grid, k, side);
            }
        }
        for k in 0..count {
            map.link_cluster(grid, k);
        }
        map
    }

    /// Brings the map up to date after edits of `changed` cells (walkability or terrain), in
    /// the clusters they touch only: their borders' transitions are found again, and the costs
    /// inside those clusters and their neighbours. Gives the same map as [`RegionMap::build`]
    /// on the edited grid (up to node numbering), at a fraction of its cost on a large map.
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
        clusters.sort_unstable();
        clusters.dedup();
        for k in clusters {
            self.link_cluster(grid, k);
        }
        self.version = grid.version();
    }

    /// Whether the map was built from `grid` as it is now (a grid edit makes it stale).
    pub fn is_current(&self, grid: &NavGrid) -> bool {
        self.version == grid.version()
    }

    /// Number of transition cells.
    pub fn node_count(&self) -> usize {
        self.nodes.len() - self.free.len()
    }

    /// Every link of the map, as (from cell, to cell, cost), sorted: between the two cells of a
    /// transition, and between the transitions of one cluster (for drawing the map, or for
    /// comparing two maps).
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
            let ab = grid.step_cost(a, b).expect("open pair");
            let ba = grid.step_cost(b, a).expect("open pair");
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
            let costs = self.costs_in_cluster(grid, self.nodes[a as usize], None, false);
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
        while let Some(Reverse((d, x, y))) = heap.pop() {
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
            for (dx, dy) in RING {
                let next = Cell::new(x + dx, y + dy);
                if !inside(next) {
                    continue;
                }
                let step = if reverse {
                    grid.step_cost(next, cell)
                } else {
                    grid.step_cost(cell, next)
                };
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
        let n = self.nodes.len();
        let (s, g) = (n as u32, n as u32 + 1);
        let cell_of = |id: u32| match id {
            id if id == s => start,
            id if id == g => goal,
            id => self.nodes[id as usize],
        };
        // Temporary edges: start to its cluster's transitions (and straight to the goal when they
        // share a cluster), the goal's cluster's transitions to the goal.
        let from_start = self.costs_in_cluster(grid, start, Some(goal), false);
        let mut start_edges: Vec<(u32, u64)> = self.per_cluster[self.cluster_of(start)]
            .iter()
            .filter_map(|&m| from_start.get(&self.nodes[m as usize]).map(|&d| (m, d)))
            .collect();
        if let Some(&d) = from_start.get(&goal) {
            start_edges.push((g, d));
        }
        let to_goal = self.costs_in_cluster(grid, goal, None, true);
        let into_goal: HashMap<u32, u64> = self.per_cluster[self.cluster_of(goal)]
            .iter()
            .filter_map(|&m| to_goal.get(&self.nodes[m as usize]).map(|&d| (m, d)))
            .collect();

        let rules = grid.rules();
        let min_terrain = grid.min_terrain() as u64;
        let h = |cell: Cell| {
            let d = (cell - goal).abs();
            Heuristic::Octile.estimate(d.x as u32, d.y as u32, rules.costs, min_terrain, WEIGHT_ONE)
        };
        // Best cost so far and parent of every node (start and goal last).
        let mut best = vec![(u64::MAX, u32::MAX); n + 2];
        let mut heap = BinaryHeap::new();
        best[s as usize] = (0, s);
        heap.push(Reverse((h(start), 0u64, s)));
        while let Some(Reverse((_, d, id))) = heap.pop() {
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
            for &(next, cost) in edges.iter().chain(to_goal.iter()) {
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
/// one with [`find_path`] and joined, and every join searched again across it (half a cluster
/// each way). Falls back to one search of the whole grid when start and goal are at most two
/// clusters apart (short paths gain nothing) or the region map has no route. The result's
/// `expansions` count every search made, so it compares with a flat search's.
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
    if !regions.is_current(grid) {
        return Err(PathError::NoPath);
    }
    let (_, goal) = resolve_ends(grid, start, goal, config.goal_policy)?;
    let apart = (goal - start).abs().max_element();
    if apart <= 2 * regions.cluster || regions.cluster_of(start) == regions.cluster_of(goal) {
        return find_path(grid, start, goal, config);
    }
    let Some(route) = regions.route(grid, start, goal) else {
        return find_path(grid, start, goal, config);
    };
    let mut path = Path {
        cells: vec![start],
        cost: 0,
        length: 0.0,
        expansions: 0,
        goal,
        goal_index: None,
    };
    // Where the legs join (the transition cells the route passes through).
    let mut joins = Vec::with_capacity(route.len());
    for leg in route.windows(2) {
        let part = find_path(grid, leg[0], leg[1], config)?;
        path.cells.extend_from_slice(&part.cells[1..]);
        path.cost += part.cost;
        path.expansions += part.expansions;
        joins.push(path.cells.len() - 1);
    }
    joins.pop();
    straighten_joins(
        grid,
        &mut path,
        &joins,
        regions.cluster as usize / 2,
        config,
    );
    path.length = cells_length(&path.cells);
    Ok(path)
}

/// Searches again across every join of the legs: from `reach` cells before it to `reach` cells
/// after, keeping the new stretch where it is cheaper (the legs must pass through the
/// transition cells; the best path rarely does). Joins are taken last first, so the indices of
/// the earlier ones still hold.
fn straighten_joins(
    grid: &NavGrid,
    path: &mut Path,
    joins: &[usize],
    reach: usize,
    config: &SearchConfig,
) {
    let step_cost = |w: &[Cell]| grid.step_cost(w[0], w[1]).unwrap_or(u64::MAX / 4);
    for &j in joins.iter().rev() {
        let (a, b) = (
            j.saturating_sub(reach),
            (j + reach).min(path.cells.len() - 1),
        );
        let old: u64 = path.cells[a..=b].windows(2).map(step_cost).sum();
        let Ok(local) = find_path(grid, path.cells[a], path.cells[b], config) else {
            continue;
        };
        path.expansions += local.expansions;
        if local.cost < old {
            path.cost = path.cost - old + local.cost;
            path.cells.splice(a..=b, local.cells);
        }
    }
}
