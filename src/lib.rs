#![doc = include_str!("../README.md")]
//!
//! ## Layers
//!
//! - [`core`]: the grid, A* / Dijkstra, smoothing and turning geometry. Plain Rust, no ECS.
//! - [`plugin`]: components, the time-sliced queue, workers, movement and claims.
//! - `tilemap` (feature `tilemap`): build and sync the grid from bevy_ecs_tilemap.
//! - `debug` (feature `debug`): gizmo overlay.
//!
//! A one-shot search with the core alone:
//!
//! ```
//! use bevy_tilepath::core::{find_path, Cell, NavGrid, SearchConfig};
//!
//! let mut grid = NavGrid::new(16, 16).unwrap();
//! for y in 0..15 {
//!     grid.set_walkable(Cell::new(8, y), false).unwrap(); // a wall with a gap at the top
//! }
//! let path = find_path(&grid, Cell::new(0, 0), Cell::new(15, 0), &SearchConfig::default()).unwrap();
//! assert!(path.cells.contains(&Cell::new(8, 15)));
//! assert_eq!(path.cells.last(), Some(&Cell::new(15, 0)));
//! ```

pub mod core;
#[cfg(feature = "debug")]
pub mod debug;
pub mod plugin;
#[cfg(feature = "tilemap")]
pub mod tilemap;

pub use plugin::TilepathPlugin;
pub use plugin::TilepathSystems;
pub use plugin::claims::Claims;
pub use plugin::components::{Path, PathFailure, PathGoal, PathRequest, PathStatus};
pub use plugin::diagnostics::TilepathDiagnostics;
pub use plugin::map::NavMap;
pub use plugin::movement::{Arrived, MoveState, Mover, PathProgress};
pub use plugin::outcomes::{OutcomeKind, PathOutcome};
pub use plugin::queue::{PathQueue, TilepathFrameStats};
pub use plugin::settings::{TilepathSettings, WorkerMode};

/// The types most users need.
pub mod prelude {
    pub use crate::core::{Cell, GoalPolicy, NavGrid};
    pub use crate::{
        Arrived, Mover, NavMap, OutcomeKind, Path, PathFailure, PathGoal, PathOutcome, PathRequest,
        PathStatus, TilepathPlugin, TilepathSettings, TilepathSystems, WorkerMode,
    };
}
