//! The components that say how stacked tilemaps share a navigation map ([`NavLayerApart`],
//! [`NavLayerOf`]).

use bevy::prelude::*;

/// Keeps a tilemap apart from the tilemaps stacked with it: it gets a navigation map of its own
/// instead of being a layer of theirs (add it before the tilemap's first frame).
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Component)]
pub struct NavLayerApart;

/// Set by the plugin on a tilemap that is a layer of another tilemap's navigation map: the
/// [`NavMap`](crate::NavMap) is on the entity named here (the lowest of the stack).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Reflect)]
#[reflect(Component)]
pub struct NavLayerOf(#[entities] pub Entity);
