//! Fixed-point step costs.

use bevy::reflect::Reflect;

/// The fixed-point cost of a straight and a diagonal step.
///
/// Costs are integers so that searches are exact and fast. [`CostModel::EXACT`] (the default)
/// uses 65536 for a straight step and 92682 for a diagonal (sqrt 2 to 1 part in 10^6), so path
/// costs agree with the MovingAI optimal lengths to their printed 6 significant digits;
/// [`CostModel::LESTER`] is the 10 / 14 model of "A* Pathfinding for Beginners".
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
pub struct CostModel {
    /// Cost of a straight (orthogonal) step onto [`NORMAL`](super::NORMAL) terrain.
    pub straight: u32,
    /// Cost of a diagonal step onto [`NORMAL`](super::NORMAL) terrain.
    pub diagonal: u32,
}

impl CostModel {
    /// 65536 / 92682: sqrt 2 with a relative error below 10^-6.
    pub const EXACT: CostModel = CostModel {
        straight: 65536,
        diagonal: 92682,
    };

    /// Lester's 10 / 14.
    pub const LESTER: CostModel = CostModel {
        straight: 10,
        diagonal: 14,
    };

    /// A cost in tiles (straight steps on normal terrain) as a float.
    pub fn to_tiles(&self, cost: u64) -> f64 {
        cost as f64 / self.straight as f64
    }

    /// A distance in tiles as a fixed-point cost (for penalties), rounded.
    pub fn from_tiles(&self, tiles: f32) -> u32 {
        (tiles.max(0.0) as f64 * self.straight as f64)
            .round()
            .min(u32::MAX as f64) as u32
    }
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel::EXACT
    }
}
