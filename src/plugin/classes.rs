//! Unit classes in the plugin: the [`UnitClass`] a game puts on units, the [`ClassId`] the
//! plugin resolves it to (with the unit's size), and the registry of classes in use, each of
//! which every [`NavMap`] keeps a grid for.

use bevy::prelude::*;

use crate::core::{MoveClass, TerrainCosts};
use crate::plugin::agent::NavAgent;
use crate::plugin::map::NavMap;

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
#[derive(Component, Clone, Debug, Default, PartialEq)]
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

/// The class a unit plans and moves as, resolved by the plugin from its [`UnitClass`] and its
/// [`NavAgent`]'s radius ([`ClassId::DEFAULT`] when neither is set apart). Read it with
/// [`NavMap::grid_of`] to see the grid the unit sees.
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

/// The classes in use: every distinct pair of costs and footprint some unit has had, in the
/// order they first appeared. Classes are never removed (a map's grid for a class no unit uses
/// any more costs its memory and its share of edits, little next to a search).
#[derive(Resource, Debug, Default)]
pub struct NavClasses {
    classes: Vec<MoveClass>,
}

impl NavClasses {
    /// The class of `id` (`None` for an id never handed out).
    pub fn get(&self, id: ClassId) -> Option<MoveClass> {
        match id.0 {
            0 => Some(MoveClass::default()),
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
    fn intern(&mut self, class: MoveClass) -> ClassId {
        if class.is_default() {
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

/// The class of a unit with these components.
pub(crate) fn move_class(class: Option<&UnitClass>, agent: Option<&NavAgent>) -> MoveClass {
    MoveClass::new(
        class.map(|c| c.costs.clone()).unwrap_or_default(),
        MoveClass::footprint_for_radius(agent.map_or(0.0, |a| a.radius)),
    )
}

/// Resolves the class of units whose [`UnitClass`] or [`NavAgent`] changed (or whose class was
/// removed), and gives every map a grid for every class in use.
pub(crate) fn resolve_classes(
    mut registry: ResMut<NavClasses>,
    changed: Query<
        (
            Entity,
            Option<&UnitClass>,
            Option<&NavAgent>,
            Option<&ClassId>,
        ),
        Or<(Changed<UnitClass>, Changed<NavAgent>)>,
    >,
    mut removed: RemovedComponents<UnitClass>,
    units: Query<(Option<&UnitClass>, Option<&NavAgent>, Option<&ClassId>)>,
    mut maps: Query<&mut NavMap>,
    mut commands: Commands,
) {
    let mut set = |entity: Entity,
                   class: Option<&UnitClass>,
                   agent: Option<&NavAgent>,
                   id: Option<&ClassId>,
                   commands: &mut Commands| {
        let new = registry.intern(move_class(class, agent));
        if ClassId::of(id) != new {
            commands.entity(entity).insert(new);
        }
    };
    for (entity, class, agent, id) in &changed {
        set(entity, class, agent, id, &mut commands);
    }
    for entity in removed.read() {
        if let Ok((class, agent, id)) = units.get(entity) {
            set(entity, class, agent, id, &mut commands);
        }
    }
    for mut map in &mut maps {
        if map.needs_classes(&registry.classes) {
            map.ensure_classes(&registry.classes);
        }
    }
}
