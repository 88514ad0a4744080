//! Island labels: connected components of walkable cells, found by flood fill and kept correct
//! incrementally as cells open and close (Lester's speed tip: reject unreachable goals at once).

/// Island labels over the padded cell array of a [`NavGrid`](super::NavGrid).
#[derive(Clone, Debug, Default)]
pub(crate) struct Islands {
    /// Label per padded cell; 0 means blocked.
    labels: Vec<u32>,
    /// Cell count per label (index 0 unused).
    sizes: Vec<u32>,
    /// Labels with at least one cell.
    live: usize,
}

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

    fn neighbours(index: usize, stride: usize) -> [usize; 4] {
        [index - stride, index + 1, index + stride, index - 1]
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
            for n in Self::neighbours(i, stride) {
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

    /// Labels every cell from scratch.
    pub(crate) fn rebuild(&mut self, terrain: &[u8], stride: usize) {
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
        for n in Self::neighbours(index, stride) {
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
        // Walk the ring of eight neighbours: walkable runs of it are connected locally. If every
        // walkable orthogonal neighbour lies in one run, the island cannot have split.
        let s = stride as i32;
        let ring: Vec<bool> = RING
            .iter()
            .map(|&(dx, dy)| terrain[(index as i32 + dy * s + dx) as usize] != 0)
            .collect();
        let mut run_of = [usize::MAX; 8];
        let mut run = 0;
        // Start after a blocked ring cell so runs are not cut at position 0.
        let Some(start) = (0..8).find(|&k| !ring[k]) else {
            return; // all eight free: still connected around the cell
        };
        for step in 1..=8 {
            let k = (start + step) % 8;
            if ring[k] {
                run_of[k] = run;
            } else {
                run += 1;
            }
        }
        let mut first_run = None;
        let mut split = false;
        for k in [0, 2, 4, 6] {
            if ring[k] {
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
        // Possibly split: relabel from each orthogonal neighbour not reached yet.
        let mut done = Vec::new();
        for n in Self::neighbours(index, stride) {
            if terrain[n] == 0 || done.contains(&self.labels[n]) {
                continue;
            }
            let l = self.new_label();
            self.flood(terrain, stride, n, l);
            done.push(l);
        }
    }
}
