#![doc = include_str!("../README.md")]
//!
//! ## The guide
//!
//! The [`guide`] module is the user guide: concepts, then a chapter per capability, then how
//! it works inside.
//!
//! ## Layers
//!
//! Each layer names only the layers under it (a test reads `src/` and fails on an import circle or
//! an upward import):
//!
//! - [`core`]: the grid, A* / Dijkstra, smoothing and turning geometry. Plain Rust, no ECS.
//! - [`plugin`]: the Bevy layer: components, the time-sliced queue, workers, movement and
//!   claims.
//! - `tilemap` (feature `tilemap`): build and sync the grid from bevy_ecs_tilemap.
//! - `debug` (feature `debug`): gizmo overlay.
//! - `avian` (feature `avian`): units that are avian2d physics bodies, walls as static colliders.
//! - On top, the plugin group [`TilepathPlugins`] and its members [`PathQueuePlugin`] and
//!   [`MovementPlugin`]: the one place every system is put in its order.
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

#[cfg(feature = "avian")]
pub mod avian;
pub mod core;
#[cfg(feature = "debug")]
pub mod debug;
pub mod guide;
pub mod plugin;
mod plugins;
#[cfg(feature = "tilemap")]
pub mod tilemap;

pub use crate::core::Formation;
pub use plugin::agent::NavAgent;
pub use plugin::checksum::NavChecksum;
pub use plugin::claims::{Claims, MAX_CLAIM_RADIUS};
pub use plugin::classes::{ClassId, ClassKey, HeldKeys, NavClasses, PlayerId, UnitClass};
pub use plugin::diagnostics::{TilepathDiagnostics, TilepathDiagnosticsPlugin, TilepathFrameStats};
pub use plugin::fog::{FogStats, Sight};
pub use plugin::group::{CLASS_SLOT_REACH, GroupOrder, group_order};
pub use plugin::map::NavMap;
pub use plugin::map::links::NavLink;
#[cfg(feature = "serialize")]
pub use plugin::map::saved::NavMapData;
pub use plugin::movement::{
    Arrived, DesiredVelocity, DriveProgress, DriveSettings, DriveStatus, EnteredLink, Errand,
    FACE_TURN_RATE, LeftLink, MoveState, MovementFrameStats, Mover, PathProgress, Vehicle,
};
pub use plugin::orders::{HoldPosition, NEXT_ORDER_WITHIN, OrderQueue, hold_position, stop};
pub use plugin::outcomes::{NavPath, OutcomeKind, PathOutcome, SearchKind};
pub use plugin::pursuit::{ANCHOR_STEP, CLOSE_IN, LEAD, PURSUIT_SLACK, Pursuit};
pub use plugin::queue::PathQueue;
pub use plugin::request::{
    PathFailure, PathGoal, PathOrigin, PathRequest, PathStatus, PendingRequests,
};
pub use plugin::saves::{SavedNav, SavedRequest, save_with};
pub use plugin::schedule::{TilepathSchedule, TilepathSystems};
pub use plugin::settings::{CrowdSettings, FogSettings, Lockstep, TilepathSettings, WorkerMode};
pub use plugin::unit_order::LockstepKey;
pub use plugins::{MovementPlugin, PathQueuePlugin, TilepathPlugins};

/// The types most users need.
pub mod prelude {
    pub use crate::core::{Cell, GoalPolicy, NavGrid};
    pub use crate::{
        Arrived, Formation, GroupOrder, MoveState, Mover, NavAgent, NavMap, NavPath, OutcomeKind,
        PathFailure, PathGoal, PathOrigin, PathOutcome, PathRequest, PathStatus, Pursuit,
        SearchKind, TilepathPlugins, TilepathSettings, TilepathSystems, Vehicle, WorkerMode,
        group_order,
    };
}
