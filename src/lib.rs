//! # bevy_tilepath
//!
//! Time-sliced, smoothed A* pathfinding for tile-based Bevy games.

pub mod core;
