//! The Bevy layer: components, resources and systems. Wired together by the plugin group
//! ([`TilepathPlugins`](crate::TilepathPlugins)), which sits above this layer; nothing here
//! names the group or an integration.
//!
//! From the bottom up (a module names only those above it in this list):
//!
//! - Leaves: [`settings`] ([`TilepathSettings`](settings::TilepathSettings), crowd, fog and
//!   lockstep settings), [`schedule`] (the [`TilepathSystems`](schedule::TilepathSystems) sets),
//!   [`agent`], [`unit_order`] (the order units are handled in, [`LockstepKey`](unit_order::LockstepKey)),
//!   [`classes`] ([`UnitClass`](classes::UnitClass), [`ClassId`](classes::ClassId)), [`claims`],
//!   [`request`] ([`PathRequest`](request::PathRequest), its status, origin and tickets),
//!   [`outcomes`] ([`PathOutcome`](outcomes::PathOutcome), the [`NavPath`](outcomes::NavPath)
//!   component), [`map`] ([`NavMap`](map::NavMap), and the systems keeping its class grids and
//!   jump tables), [`traffic`] (which wide units will cross which passages one cell wide),
//!   [`diagnostics`] (the frame's statistics and the phase timer).
//! - Systems: [`queue`] (validation, the start policy, inline slicing, workers, delivery,
//!   repath on edit), [`movement`] (following paths, crowd decisions, claims upkeep),
//!   [`orders`] (queued waypoints and patrols, stop, hold position), [`pursuit`] (follow
//!   orders), [`group`] ([`group_order`](group::group_order): a slot per unit, one shared
//!   search), [`fog`] (what each player's units have seen), [`saves`]
//!   ([`save_with`](saves::save_with): what is saved, what is rebuilt).
//! - Readers of everything: [`checksum`] (the desync checksum of lockstep mode,
//!   [`NavChecksum`](checksum::NavChecksum)), and the lifecycle hooks of a request (booked on
//!   insert, cancelled on removal, dropped with its despawned unit).

pub mod agent;
mod background;
pub mod checksum;
pub mod claims;
pub mod classes;
pub(crate) mod cooperative;
mod cpu_clock;
pub mod diagnostics;
pub mod fog;
pub mod group;
pub(crate) mod lifecycle;
pub mod map;
pub mod movement;
pub mod orders;
pub mod outcomes;
pub mod pursuit;
pub mod queue;
pub mod request;
pub mod saves;
pub mod schedule;
pub mod settings;
pub mod traffic;
pub mod unit_order;
