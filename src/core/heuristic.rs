//! Heuristics: estimates of the remaining cost from a cell to the goal (the H of F = G + H).

use bevy::reflect::Reflect;

use super::cost::CostModel;

/// The heuristic a search uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
pub enum Heuristic {
    /// Octile distance: the exact cost on an empty eight-way grid (the default). Admissible and
    /// consistent for eight-way moves, scaled by the cheapest terrain on the grid.
    #[default]
    Octile,
    /// Manhattan distance times the straight cost, as in Lester's article. **Inadmissible** with
    /// diagonal moves: it overestimates, so paths may be a little longer than the shortest, in
    /// exchange for fewer expansions. Admissible (and exact on empty grids) for four-way moves.
    Manhattan,
    /// Straight-line distance. Admissible for every move rule, less informed than octile.
    Euclidean,
    /// The larger axis distance times the straight cost. Admissible for every move rule.
    Chebyshev,
    /// Always zero: the search becomes Dijkstra's algorithm.
    Zero,
}

/// The octile cost of a move `dx` by `dy` cells (absolute) on an open eight-way grid whose
/// straight and diagonal steps cost `straight` and `diagonal`.
#[inline(always)]
pub(crate) fn octile(dx: u64, dy: u64, straight: u64, diagonal: u64) -> u64 {
    let (hi, lo) = (dx.max(dy), dx.min(dy));
    (hi - lo) * straight + lo * diagonal
}

impl Heuristic {
    /// The estimate from a cell `dx`, `dy` (absolute) away from the goal, for step costs `costs`,
    /// cheapest terrain `min_terrain` and weight (fixed point, 1024 = 1.0).
    #[inline(always)]
    pub(crate) fn estimate(
        self,
        dx: u32,
        dy: u32,
        costs: CostModel,
        min_terrain: u64,
        weight: u64,
    ) -> u64 {
        let hi = dx.max(dy);
        let raw = match self {
            Heuristic::Octile => octile(
                dx as u64,
                dy as u64,
                costs.straight as u64,
                costs.diagonal as u64,
            ),
            Heuristic::Manhattan => (dx + dy) as u64 * costs.straight as u64,
            Heuristic::Euclidean => {
                let d = ((dx as f64).powi(2) + (dy as f64).powi(2)).sqrt();
                (d * costs.straight as f64) as u64
            }
            Heuristic::Chebyshev => hi as u64 * costs.straight as u64,
            Heuristic::Zero => 0,
        };
        let h = raw * min_terrain;
        if weight == WEIGHT_ONE {
            h
        } else {
            h * weight / WEIGHT_ONE
        }
    }

    /// Whether this heuristic never overestimates for the given diagonal setting.
    pub fn is_admissible(self, eight_way: bool) -> bool {
        !(eight_way && self == Heuristic::Manhattan)
    }
}

/// Fixed-point 1.0 for heuristic weights.
pub(crate) const WEIGHT_ONE: u64 = 1024;

/// A weight as fixed point (1024 = 1.0); negative and non-finite weights become 1.0.
pub(crate) fn weight_fixed(weight: f32) -> u64 {
    if weight.is_finite() && weight >= 0.0 {
        (weight as f64 * WEIGHT_ONE as f64).round() as u64
    } else {
        WEIGHT_ONE
    }
}
