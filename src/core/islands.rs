//! Island labels: connected components of walkable cells, found by flood fill and kept correct
//! incrementally as cells open and close (Lester's speed tip: reject unreachable goals at once).

use super::hex::ACROSS;

/// Island labels over the padded cell array of a [`NavGrid`](super::NavGrid).
#[derive(Clone, Debug, Default)]
pub(crate) struct Islands {
    /// Label per padded cell; 0 means blocked.
    labels: Vec<u32>,
    /// Cell count per label (index 0 unused).
    sizes: Vec<u32>,
    /// Labels with at least one cell.
    live: usize,
    /// Hexagonal (six-neighbour, axial) connectivity instead of four-way.
    hex: bool,
}

/// Cells the neighbours of a cell just blocked may search round it for each other before its
/// island is relabelled (see `Islands::cell_blocked`).
const RECONNECT_CELLS: usize = 1024;

/// The eight neighbour offsets, in order around a cell.
pub(super) const RING: [(i32, i32); 8] = [
    (0, -1),
    (1, -1),
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
];

/// The padded indices of the cells that connect to `index` (four-way, or the six hexagonal
/// neighbours), and how many there are.
fn neighbours(index: usize, stride: usize, hex: bool) -> ([usize; 6], usize) {
    let mut out = [index - stride, index + 1, index + stride, index - 1, 0, 0];
    if hex {
        // Axial (1, -1) and (-1, 1).
        out[4] = index + 1 - stride;
        out[5] = index + stride - 1;
        (out, 6)
    } else {
        (out, 4)
    }
}

impl Islands {
    pub(crate) fn label(&self, index: usize) -> Option<u32> {
        match self.labels.get(index) {
            Some(0) | None => None,
            Some(&l) => Some(l),
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.live
    }

    fn new_label(&mut self) -> u32 {
        self.sizes.push(0);
        self.live += 1;
        (self.sizes.len() - 1) as u32
    }

    /// Relabels every walkable cell reachable from `seed` (whose label differs from `label`).
    fn flood(&mut self, terrain: &[u8], stride: usize, seed: usize, label: u32) {
        let mut stack = vec![seed];
        let old = self.labels[seed];
        if old != 0 && old != label {
            self.sizes[old as usize] -= 1;
            if self.sizes[old as usize] == 0 {
                self.live -= 1;
            }
        }
        self.labels[seed] = label;
        self.sizes[label as usize] += 1;
        while let Some(i) = stack.pop() {
            let (ns, count) = neighbours(i, stride, self.hex);
            for &n in &ns[..count] {
                let l = self.labels[n];
                if terrain[n] != 0 && l != label {
                    if l != 0 {
                        self.sizes[l as usize] -= 1;
                        if self.sizes[l as usize] == 0 {
                            self.live -= 1;
                        }
                    }
                    self.labels[n] = label;
                    self.sizes[label as usize] += 1;
                    stack.push(n);
                }
            }
        }
    }

    /// Labels every cell from scratch, with hexagonal or four-way connectivity.
    pub(crate) fn rebuild(&mut self, terrain: &[u8], stride: usize, hex: bool) {
        self.hex = hex;
        self.labels.clear();
        self.labels.resize(terrain.len(), 0);
        self.sizes.clear();
        self.sizes.push(0);
        self.live = 0;
        for i in 0..terrain.len() {
            if terrain[i] != 0 && self.labels[i] == 0 {
                let l = self.new_label();
                self.flood(terrain, stride, i, l);
            }
        }
    }

    /// `index` just became walkable: join it to its neighbours, merging their islands.
    pub(crate) fn cell_opened(&mut self, terrain: &[u8], stride: usize, index: usize) {
        let mut best = 0u32;
        let (ns, count) = neighbours(index, stride, self.hex);
        for &n in &ns[..count] {
            let l = self.labels[n];
            if l != 0 && (best == 0 || self.sizes[l as usize] > self.sizes[best as usize]) {
                best = l;
            }
        }
        if best == 0 {
            best = self.new_label();
        }
        // Floods only the cell and the smaller islands it connects to the biggest one.
        self.flood(terrain, stride, index, best);
    }

    /// Whether the cells `targets` (of one island) all reach the first of them within
    /// [`RECONNECT_CELLS`] cells of a breadth-first search from it: the neighbours of a cell
    /// just blocked that still do keep their island whole, and the island needs no relabelling
    /// (a flood of the whole island: 1-3 ms on a 256 x 256 map with scattered blocks, where a
    /// blocked cell's neighbours were cut apart in its ring of eight at most edits).
    fn reach_each_other(&self, terrain: &[u8], stride: usize, targets: &[usize]) -> bool {
        let Some((&first, others)) = targets.split_first() else {
            return true;
        };
        let mut missing: Vec<usize> = others.to_vec();
        let mut seen = std::collections::HashSet::from([first]);
        let mut queue = std::collections::VecDeque::from([first]);
        while let Some(i) = queue.pop_front() {
            missing.retain(|&t| t != i);
            if missing.is_empty() {
                return true;
            }
            let (ns, count) = neighbours(i, stride, self.hex);
            for &n in &ns[..count] {
                if terrain[n] != 0 && seen.len() < RECONNECT_CELLS && seen.insert(n) {
                    queue.push_back(n);
                }
            }
        }
        false
    }

    /// `index` just became blocked: its island may have split in two or more.
    pub(crate) fn cell_blocked(&mut self, terrain: &[u8], stride: usize, index: usize) {
        let old = self.labels[index];
        if old == 0 {
            return;
        }
        self.labels[index] = 0;
        self.sizes[old as usize] -= 1;
        if self.sizes[old as usize] == 0 {
            self.live -= 1;
            return;
        }
        // Walk the ring of neighbours (eight around a square, six around a hexagon): walkable
        // runs of it are connected locally. If every walkable neighbour that connects (the
        // orthogonal ones on a square grid, all six on a hexagonal one) lies in one run, the
        // island cannot have split.
        let s = stride as i32;
        let free_at = |(dx, dy): (i32, i32)| terrain[(index as i32 + dy * s + dx) as usize] != 0;
        let free: Vec<bool> = if self.hex {
            ACROSS.iter().map(|d| free_at((d.x, d.y))).collect()
        } else {
            RING.into_iter().map(free_at).collect()
        };
        let len = free.len();
        let mut run_of = [usize::MAX; 8];
        let mut run = 0;
        // Start after a blocked ring cell so runs are not cut at position 0.
        let Some(start) = (0..len).find(|&k| !free[k]) else {
            return; // all free: still connected around the cell
        };
        for step in 1..=len {
            let k = (start + step) % len;
            if free[k] {
                run_of[k] = run;
            } else {
                run += 1;
            }
        }
        let mut first_run = None;
        let mut split = false;
        let step = if self.hex { 1 } else { 2 };
        for k in (0..len).step_by(step) {
            if free[k] {
                match first_run {
                    None => first_run = Some(run_of[k]),
                    Some(r) if r != run_of[k] => split = true,
                    _ => {}
                }
            }
        }
        if !split {
            return;
        }
        // Possibly split: if the neighbours still reach each other near the cell, it has not;
        // else relabel from each neighbour not reached yet.
        let (ns, count) = neighbours(index, stride, self.hex);
        let open: Vec<usize> = ns[..count]
            .iter()
            .copied()
            .filter(|&n| terrain[n] != 0)
            .collect();
        if self.reach_each_other(terrain, stride, &open) {
            return;
        }
        let mut done = Vec::new();
        for &n in &ns[..count] {
            if terrain[n] == 0 || done.contains(&self.labels[n]) {
                continue;
            }
            let l = self.new_label();
            self.flood(terrain, stride, n, l);
            done.push(l);
        }
    }
}
