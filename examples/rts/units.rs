//! The demo's units: two armies of infantry and, with `--mixed`, tanks among them (two tiles
//! across, closed out of forest and water, fastest on roads). The windowed game and the headless
//! run spawn the same armies.

use std::collections::{HashMap, HashSet};

use bevy::prelude::*;
use bevy_tilepath::core::ReverseRules;
use bevy_tilepath::core::{
    Cell, ClassGrid, DriveQuery, LinkKeys, MoveClass, NavGrid, TerrainCosts, VehicleModel,
    VehicleRules, find_drive,
};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{DriveSettings, HeldKeys, LockstepKey, NavAgent, PlayerId, UnitClass, Vehicle};

use crate::DemoConfig;
use crate::common::Rng;
use crate::map::{DemoMap, GATE_KEY, MAP_W, Terrain, main_island};

/// A unit of the demo: its army.
#[derive(Component, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Team {
    Blue,
    Red,
}

impl Team {
    /// The keys the army's units hold: blue's open the gate through the long wall.
    pub fn keys(self) -> HeldKeys {
        match self {
            Team::Blue => HeldKeys(GATE_KEY),
            Team::Red => HeldKeys(LinkKeys::NONE),
        }
    }

    /// The army's player under fog of war.
    pub fn player(self) -> PlayerId {
        match self {
            Team::Blue => PlayerId(1),
            Team::Red => PlayerId(2),
        }
    }
}

/// What a unit is.
#[derive(Component, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Infantry,
    /// Two tiles across; forest is closed to it.
    Tank,
}

/// Under `--mixed`, every this many units of an army one is a tank.
const TANK_EVERY: usize = 8;

/// A tank's body radius in tiles (two tiles across, a little less so two tanks pass in a
/// five-tile road).
pub const TANK_RADIUS: f32 = 0.9;

impl Kind {
    /// The unit's body radius in tiles.
    pub fn radius(self, config: &DemoConfig) -> f32 {
        match self {
            Kind::Infantry => config.map.unit_radius(),
            Kind::Tank => TANK_RADIUS,
        }
    }

    /// Its class's terrain costs: infantry pays the map's costs (forest slow), tanks cannot
    /// enter forest and pay grass a little more.
    pub fn costs(self) -> TerrainCosts {
        match self {
            Kind::Infantry => TerrainCosts::identity(),
            Kind::Tank => TerrainCosts::identity()
                .blocking(Terrain::Forest.cost())
                .with_cost(Terrain::Grass.cost(), 3),
        }
    }

    /// The class the plugin resolves the unit to (the grid it plans on).
    pub fn class(self, config: &DemoConfig) -> MoveClass {
        MoveClass::new(
            self.costs(),
            MoveClass::footprint_for_radius(self.radius(config)),
        )
    }

    /// Its mover: tanks are slower and turn wider.
    pub fn mover(self, config: &DemoConfig) -> Mover {
        match self {
            Kind::Infantry => Mover {
                speed: 5.0,
                turning_radius: config.turning_radius,
                ..Default::default()
            },
            Kind::Tank => Mover {
                speed: 4.0,
                turning_radius: config.turning_radius.max(1.0),
                ..Default::default()
            },
        }
    }

    /// What to put on a unit of this kind besides its place and looks.
    pub fn bundle(self, config: &DemoConfig) -> impl Bundle {
        (
            self,
            self.mover(config),
            NavAgent {
                radius: self.radius(config),
            },
            UnitClass::new(self.costs()),
        )
    }
}

/// A vehicle tank's turning radius, in tiles.
const TANK_TURNING_RADIUS: f32 = 1.5;

/// Under `--vehicles`, each tank becomes a [`Vehicle`] as it is spawned: it drives legal turns of
/// radius [`TANK_TURNING_RADIUS`] and may reverse (looking `--look-ahead` seconds ahead for
/// tanks crossing its way, see [`DriveSettings::look_ahead`]).
pub fn tanks_as_vehicles(app: &mut App, config: &DemoConfig) {
    if config.vehicles {
        app.insert_resource(DriveSettings {
            look_ahead: config.look_ahead,
            ..default()
        });
        app.add_observer(
            |add: On<Add, Kind>, kinds: Query<&Kind>, mut commands: Commands| {
                if kinds.get(add.entity) == Ok(&Kind::Tank) {
                    commands.entity(add.entity).insert(Vehicle {
                        turning_radius: TANK_TURNING_RADIUS,
                        reverse: Some(ReverseRules::default()),
                        ..default()
                    });
                }
            },
        );
    }
}

/// A unit to spawn.
pub struct Recruit {
    /// Its place in the muster: its [`LockstepKey`], the name orders and replays give it.
    pub key: u64,
    pub team: Team,
    pub kind: Kind,
    pub cell: Cell,
}

impl Recruit {
    /// Its key, army, kind, class, body, player and link keys (its place and looks are the
    /// caller's).
    pub fn bundle(&self, config: &DemoConfig) -> impl Bundle {
        (
            LockstepKey(self.key),
            self.team,
            self.team.player(),
            self.team.keys(),
            self.kind.bundle(config),
        )
    }
}

/// The armies: blue in the left third, red in the right, `config.units` in all; under
/// `--mixed` one in [`TANK_EVERY`] a tank, standing where its class's grid lets it (under
/// `--vehicles`, only where a vehicle tank facing east can drive out to the middle of its
/// ground: a pocket of open cells among forest can be too tight to turn or back out of).
pub fn muster(map: &DemoMap, config: &DemoConfig, rng: &mut Rng) -> Vec<Recruit> {
    let half = config.units / 2;
    let tank_grid = config.mixed.then(|| {
        ClassGrid::new(map.grid(), Kind::Tank.class(config)).expect("tanks on a square grid")
    });
    let mut out = Vec::new();
    let mut taken = HashSet::new();
    for (team, left, count) in [
        (Team::Blue, true, half),
        (Team::Red, false, config.units - half),
    ] {
        let tanks = if config.mixed { count / TANK_EVERY } else { 0 };
        if let Some(grid) = &tank_grid {
            let model = config.vehicles.then(|| vehicle_model(grid, config));
            let drives_out = |cell: Cell, middle: Cell| {
                model.as_ref().is_none_or(|m| {
                    let query = DriveQuery {
                        start: cell,
                        heading: 0,
                        goal: middle,
                        facing: None,
                        max_expansions: 200_000,
                    };
                    find_drive(grid.grid(), m, query).is_ok()
                })
            };
            let spots = spawn_positions(map, grid.grid(), tanks, left, &taken, rng, drives_out);
            for cell in spots {
                taken.insert(cell);
                out.push(Recruit {
                    key: out.len() as u64,
                    team,
                    kind: Kind::Tank,
                    cell,
                });
            }
        }
        let infantry = count - tanks;
        let anywhere = |_: Cell, _: Cell| true;
        for cell in spawn_positions(map, map.grid(), infantry, left, &taken, rng, anywhere) {
            taken.insert(cell);
            out.push(Recruit {
                key: out.len() as u64,
                team,
                kind: Kind::Infantry,
                cell,
            });
        }
    }
    out
}

/// `n` random cells of `grid` not `taken`, in the left or right third of the map, on the grid's
/// main island (or, if that does not reach this third, the largest island there: forests and
/// gates may cut tanks off where infantry passes), for which `fits(cell, middle)` holds, where
/// `middle` is the island's cell nearest the middle of the map.
fn spawn_positions(
    map: &DemoMap,
    grid: &NavGrid,
    n: usize,
    left: bool,
    taken: &HashSet<Cell>,
    rng: &mut Rng,
    fits: impl Fn(Cell, Cell) -> bool,
) -> Vec<Cell> {
    let side: Vec<Cell> = grid
        .cells()
        .filter(|&c| {
            let x = map.tile(c).map_or(0, |t| t.x);
            if left {
                x < MAP_W / 3
            } else {
                x >= 2 * MAP_W / 3
            }
        })
        .collect();
    let main = main_island(grid);
    let island = if side.iter().any(|&c| grid.island(c) == main) {
        main
    } else {
        let mut sizes: HashMap<u32, usize> = HashMap::new();
        for i in side.iter().filter_map(|&c| grid.island(c)) {
            *sizes.entry(i).or_default() += 1;
        }
        sizes
            .into_iter()
            .max_by_key(|&(i, n)| (n, i))
            .map(|(i, _)| i)
    };
    let mut cells: Vec<Cell> = side
        .into_iter()
        .filter(|c| !taken.contains(c))
        .filter(|&c| island.is_some() && grid.island(c) == island)
        .collect();
    for i in (1..cells.len()).rev() {
        cells.swap(i, rng.below(i as u32 + 1) as usize);
    }
    let centre = Vec2::new(grid.width() as f32, grid.height() as f32) / 2.0;
    let middle = grid
        .cells()
        .filter(|&c| island.is_some() && grid.island(c) == island)
        .min_by_key(|c| (c.as_vec2().distance_squared(centre) * 4.0) as u32);
    let Some(middle) = middle else {
        return Vec::new();
    };
    cells
        .into_iter()
        .filter(|&c| fits(c, middle))
        .take(n)
        .collect()
}

/// The lattice of a demo vehicle tank (see [`tanks_as_vehicles`]) on its class's `grid`.
fn vehicle_model(grid: &ClassGrid, config: &DemoConfig) -> VehicleModel {
    let body = Kind::Tank
        .class(config)
        .wall_radius(Kind::Tank.radius(config));
    let rules = VehicleRules {
        turning_radius: TANK_TURNING_RADIUS,
        body_radius: body,
        reverse: Some(ReverseRules::default()),
    };
    VehicleModel::new(rules, grid.grid().rules().costs).expect("the demo's tanks are legal")
}
