//! The user guide, in the order a reader follows it. Every code block in it compiles, and
//! those that claim a behaviour assert it (they run as doc tests).
//!
//! 1. [Concepts](concepts): grid, map, request, outcome.
//! 2. [Orders](orders): group orders, formations and lanes; waypoints, patrols, stop and hold.
//! 3. [Following](following): units that follow a moving unit.
//! 4. [Unit classes](classes): terrain costs per class, wide units, fog of war.
//! 5. [Vehicles](vehicles): units that cannot turn in place.
//! 6. [Links](links): doors, one-way drops and teleporters.
//! 7. [Lockstep](lockstep): multiplayer and replays that repeat to the checksum.
//! 8. [Physics](physics): avian2d bodies and your own controllers.
//! 9. [Saves](saves): saved games.
//! 10. [Tilemaps](tilemaps): bevy_ecs_tilemap maps of every kind.
//! 11. [Performance](performance): what it costs, and the settings that tune it.
//! 12. [How it works](how_it_works): the searches, the queue, smoothing, crowds.
//! 13. [Architecture](architecture): the layers and the way a request travels.
//! 14. [Known limits](limits).

#[doc = include_str!("concepts.md")]
pub mod concepts {}

#[doc = include_str!("orders.md")]
pub mod orders {}

#[doc = include_str!("following.md")]
pub mod following {}

#[doc = include_str!("classes.md")]
pub mod classes {}

#[doc = include_str!("vehicles.md")]
pub mod vehicles {}

#[doc = include_str!("links.md")]
pub mod links {}

#[doc = include_str!("lockstep.md")]
pub mod lockstep {}

#[doc = include_str!("physics.md")]
pub mod physics {}

#[doc = include_str!("saves.md")]
pub mod saves {}

#[doc = include_str!("tilemaps.md")]
pub mod tilemaps {}

#[doc = include_str!("performance.md")]
pub mod performance {}

#[doc = include_str!("how_it_works.md")]
pub mod how_it_works {}

#[doc = include_str!("architecture.md")]
pub mod architecture {}

#[doc = include_str!("limits.md")]
pub mod limits {}
