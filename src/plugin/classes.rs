//! Unit classes in the plugin: the [`UnitClass`] a game puts on units, the [`ClassId`] the
//! plugin resolves it to (with the unit's size and, under fog of war, its [`PlayerId`]), and the
//! registry of classes in use, each of which every [`NavMap`](crate::NavMap) keeps a grid for.

use bevy::prelude::*;

use crate::core::{LinkKeys, MoveClass, TerrainCosts};
use crate::plugin::agent::NavAgent;

/// What terrain costs a unit: put it on units that are not infantry (vehicles that cannot enter
/// forest, amphibious units that cross water). The grid's terrain values are kinds; a unit
/// without this component pays a kind's own value, as every unit did before classes.
///
/// A unit's class also counts its size: a [`NavAgent`] wider than a tile (radius over half a
/// tile) needs clearance, so it plans only where its body fits. Units of equal costs and
/// footprint share one class grid per map.
///
/// ```
/// use bevy_tilepath::core::TerrainCosts;
/// use bevy_tilepath::UnitClass;
///
/// const FOREST: u8 = 3;
/// const ROAD: u8 = 2;
/// // Tanks: forest is closed to them, roads are as fast as open ground.
/// let tank = UnitClass::new(TerrainCosts::identity().blocking(FOREST).with_cost(ROAD, 1));
/// ```
#[derive(Component, Clone, Debug, Default, PartialEq, Reflect)]
#[reflect(Component, Default)]
pub struct UnitClass {
    /// The cost of each terrain kind for this unit.
    pub costs: TerrainCosts,
}

impl UnitClass {
    /// A class with these costs.
    pub fn new(costs: TerrainCosts) -> Self {
        UnitClass { costs }
    }
}

/// The keys a unit holds: it may cross links that need one of them
/// ([`Link::keys`](crate::core::Link::keys)), such as a gate that opens for one player's units
/// only. A unit without this component holds none: it crosses only links that need no key.
/// Units holding keys plan on a grid of their own, like a class ([`ClassId`]).
///
/// ```
/// use bevy_tilepath::core::LinkKeys;
/// use bevy_tilepath::HeldKeys;
///
/// // Each player's gates open with the key numbered as the player.
/// let blue = HeldKeys(LinkKeys::key(0));
/// assert!(LinkKeys::key(0).open_to(blue.0) && !LinkKeys::key(1).open_to(blue.0));
/// ```
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[reflect(Component, Default)]
pub struct HeldKeys(pub LinkKeys);

/// The player a unit belongs to: under fog of war
/// ([`FogSettings`](crate::FogSettings)) it plans on what its player's units have seen, and
/// reveals what it sees ([`Sight`](crate::Sight)). Without fog it changes nothing.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
#[reflect(Component)]
pub struct PlayerId(pub u8);

/// The class a unit plans and moves as, resolved by the plugin from its [`UnitClass`], its
/// [`NavAgent`]'s radius, its [`HeldKeys`] and, under fog of war, its [`PlayerId`] ([`ClassId::DEFAULT`] when
/// none sets it apart). Read it with [`NavMap::grid_of`](crate::NavMap::grid_of) to see the grid the unit sees.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[reflect(Component)]
pub struct ClassId(pub(crate) u16);

impl ClassId {
    /// The default class: terrain kinds cost their own value, bodies within a tile. It plans on
    /// the shared grid.
    pub const DEFAULT: ClassId = ClassId(0);

    /// The class of an entity with this component, or the default.
    pub fn of(id: Option<&ClassId>) -> ClassId {
        id.copied().unwrap_or_default()
    }
}

/// What a class is: costs and footprint, and the player whose knowledge it plans with.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ClassKey {
    /// Terrain costs and footprint.
    pub class: MoveClass,
    /// Under fog of war, the player whose knowledge of the map it plans with.
    pub player: Option<u8>,
}

/// The classes in use: every distinct class, size and (under fog of war) player some unit has
/// had, in the order they first appeared. Classes are never removed (a map's grid for a class
/// no unit uses any more costs its memory and its share of edits, little next to a search).
#[derive(Resource, Debug, Default)]
pub struct NavClasses {
    pub(crate) classes: Vec<ClassKey>,
}

impl NavClasses {
    /// The class of `id` (`None` for an id never handed out).
    pub fn get(&self, id: ClassId) -> Option<ClassKey> {
        match id.0 {
            0 => Some(ClassKey::default()),
            k => self.classes.get(k as usize - 1).cloned(),
        }
    }

    /// How many classes there are, the default one included.
    pub fn len(&self) -> usize {
        self.classes.len() + 1
    }

    /// Whether only the default class is in use.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// The id of `class`, registering it if it is new.
    pub(crate) fn intern(&mut self, class: ClassKey) -> ClassId {
        if class.class.is_default() && class.player.is_none() {
            return ClassId::DEFAULT;
        }
        let k = match self.classes.iter().position(|c| *c == class) {
            Some(k) => k,
            None => {
                self.classes.push(class);
                self.classes.len() - 1
            }
        };
        ClassId(k as u16 + 1)
    }
}

/// What a unit's class is made of: its [`UnitClass`], [`NavAgent`], [`PlayerId`] and
/// [`HeldKeys`].
pub(crate) type ClassParts<'a> = (
    Option<&'a UnitClass>,
    Option<&'a NavAgent>,
    Option<&'a PlayerId>,
    Option<&'a HeldKeys>,
);

/// The class of a unit with these components (its player counts under fog only).
pub(crate) fn class_key((class, agent, player, keys): ClassParts, fog: bool) -> ClassKey {
    ClassKey {
        class: MoveClass::new(
            class.map(|c| c.costs.clone()).unwrap_or_default(),
            MoveClass::footprint_for_radius(agent.map_or(0.0, |a| a.radius)),
        )
        .with_keys(keys.map_or(LinkKeys::NONE, |k| k.0)),
        player: player.filter(|_| fog).map(|p| p.0),
    }
}
