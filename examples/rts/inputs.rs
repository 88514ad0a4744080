//! The simulation's inputs: the player's and the red script's orders, walls toggled and fog of
//! war turned on or off. The window and the scripts only collect them ([`Inputs::give`]);
//! [`apply_inputs`] applies them at the start of the next tick of the simulation's schedule
//! (`FixedUpdate` in lockstep mode, `Update` otherwise), naming units by their [`LockstepKey`].
//! That is what makes replays possible: `--record FILE` writes every input with its tick, and
//! the plugin's [`NavChecksum`] every few ticks; `--replay FILE` feeds the inputs back at the
//! same ticks instead of the player's and the script's, and checks each recorded checksum as its
//! tick passes. In lockstep mode the simulation depends only on its ticks and inputs, so a replay
//! recorded in the window reproduces headless, on another machine, under any load.
//!
//! A replay is a text file:
//!
//! ```text
//! rts-replay 1 --seed 1 --units 600 --map square --turning-radius 0.5 --workers 4
//! 31 order 10 82,35 12,13,14
//! 95 wall 40,20
//! 120 checksum 3a0c5e7d11f2b904
//! 300 fog
//! ```
//!
//! The first line holds the options the simulation depends on (the replay runs with them,
//! whatever the command line says); then one input or checksum a line, in tick order: `order
//! PRIORITY X,Y KEY,KEY,...` sends the units with those keys to tile (X, Y), `follow PRIORITY
//! TARGET KEY,KEY,...` has them follow the unit with key TARGET, `wall X,Y` toggles that tile
//! between wall and grass, `fog` toggles fog of war, `gate` opens or shuts the gate through the
//! long wall.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};

use bevy::ecs::world::CommandQueue;
use bevy::prelude::*;
use bevy_ecs_tilemap::prelude::*;
use bevy_tilepath::core::BLOCKED;
use bevy_tilepath::prelude::*;
use bevy_tilepath::tilemap::{NavTile, NavTileLink};
use bevy_tilepath::{ClassId, HoldPosition, LockstepKey, NavChecksum, OrderQueue};

use crate::DemoConfig;
use crate::map::{DemoLink, DemoMap, Terrain};
use crate::orders::{FOLLOW_RANGE, order_group};

/// One input to the simulation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// The units with these keys sent to a tile, at a priority, to stand there in a shape.
    Order {
        units: Vec<u64>,
        tile: UVec2,
        priority: i32,
        shape: Shape,
    },
    /// The units with these keys sent on to a tile after their current orders (shift-click);
    /// idle units go at once.
    Waypoint {
        units: Vec<u64>,
        tile: UVec2,
        priority: i32,
    },
    /// The units with these keys patrol between where they stand and a tile.
    Patrol {
        units: Vec<u64>,
        tile: UVec2,
        priority: i32,
    },
    /// The units with these keys stop where they stand (and, with `hold`, hold the position).
    Stop { units: Vec<u64>, hold: bool },
    /// The units with these keys follow the unit with key `target` (within
    /// [`FOLLOW_RANGE`](crate::orders::FOLLOW_RANGE)), at a priority.
    Follow {
        units: Vec<u64>,
        target: u64,
        priority: i32,
    },
    /// A tile toggled between wall and grass.
    Wall(UVec2),
    /// Fog of war turned on or off.
    Fog,
    /// The gate through the long wall opened or shut.
    Gate,
}

impl Input {
    /// The input as a replay line's words after the tick.
    fn to_line(&self) -> String {
        let keys = |units: &[u64]| {
            let keys: Vec<String> = units.iter().map(u64::to_string).collect();
            keys.join(",")
        };
        match self {
            Input::Order {
                units,
                tile,
                priority,
                shape,
            } => format!(
                "order {priority} {},{} {}{}",
                tile.x,
                tile.y,
                keys(units),
                shape.words()
            ),
            Input::Waypoint {
                units,
                tile,
                priority,
            } => format!("waypoint {priority} {},{} {}", tile.x, tile.y, keys(units)),
            Input::Patrol {
                units,
                tile,
                priority,
            } => format!("patrol {priority} {},{} {}", tile.x, tile.y, keys(units)),
            Input::Stop { units, hold } => {
                let word = if *hold { "hold" } else { "stop" };
                format!("{word} {}", keys(units))
            }
            Input::Follow {
                units,
                target,
                priority,
            } => format!("follow {priority} {target} {}", keys(units)),
            Input::Wall(tile) => format!("wall {},{}", tile.x, tile.y),
            Input::Fog => "fog".to_string(),
            Input::Gate => "gate".to_string(),
        }
    }
}

/// How an ordered group stands at its target: its formation and, for a line or a box, which
/// way it faces (in tiles; `None`: the way it goes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    pub formation: Formation,
    pub facing: Option<IVec2>,
}

/// The formations' names, in replays and the HUD.
const FORMATION_NAMES: [(Formation, &str); 4] = [
    (Formation::Blob, "blob"),
    (Formation::KeepShape, "keep"),
    (Formation::Line, "line"),
    (Formation::Box, "box"),
];

/// A formation's name.
pub fn formation_name(formation: Formation) -> &'static str {
    FORMATION_NAMES
        .iter()
        .find(|n| n.0 == formation)
        .map_or("blob", |n| n.1)
}

impl Shape {
    /// The words an order's replay line ends with: none for a blob with no facing, else
    /// ` formation=NAME` and ` facing=DX,DY`.
    fn words(&self) -> String {
        let mut w = String::new();
        if self.formation != Formation::Blob {
            w += &format!(" formation={}", formation_name(self.formation));
        }
        if let Some(f) = self.facing {
            w += &format!(" facing={},{}", f.x, f.y);
        }
        w
    }

    /// Reads the words [`Shape::words`] writes (none: a blob).
    fn parse<'a>(words: &mut impl Iterator<Item = &'a str>) -> Option<Shape> {
        let mut shape = Shape::default();
        for word in words {
            match word.split_once('=')? {
                ("formation", name) => {
                    shape.formation = FORMATION_NAMES.iter().find(|n| n.1 == name)?.0;
                }
                ("facing", xy) => {
                    let (x, y) = xy.split_once(',')?;
                    shape.facing = Some(IVec2::new(x.parse().ok()?, y.parse().ok()?));
                }
                _ => return None,
            }
        }
        Some(shape)
    }
}

/// A replay line.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Input(u64, Input),
    Checksum(u64, u64),
}

fn parse_tile(s: &str) -> Option<UVec2> {
    let (x, y) = s.split_once(',')?;
    Some(UVec2::new(x.parse().ok()?, y.parse().ok()?))
}

/// Unit keys, comma-separated (none if there is no word).
fn parse_keys(word: Option<&str>) -> Option<Vec<u64>> {
    match word {
        Some(keys) => keys.split(',').map(|k| k.parse().ok()).collect(),
        None => Some(Vec::new()),
    }
}

fn parse_line(line: &str) -> Option<Line> {
    let mut words = line.split_whitespace();
    let tick: u64 = words.next()?.parse().ok()?;
    let kind = words.next()?;
    let line = match kind {
        "order" | "waypoint" | "patrol" => {
            let priority = words.next()?.parse().ok()?;
            let tile = parse_tile(words.next()?)?;
            let units = parse_keys(words.next())?;
            let input = match kind {
                "order" => Input::Order {
                    units,
                    tile,
                    priority,
                    shape: Shape::parse(&mut words)?,
                },
                "waypoint" => Input::Waypoint {
                    units,
                    tile,
                    priority,
                },
                _ => Input::Patrol {
                    units,
                    tile,
                    priority,
                },
            };
            Line::Input(tick, input)
        }
        "stop" | "hold" => Line::Input(
            tick,
            Input::Stop {
                units: parse_keys(words.next())?,
                hold: kind == "hold",
            },
        ),
        "follow" => Line::Input(
            tick,
            Input::Follow {
                priority: words.next()?.parse().ok()?,
                target: words.next()?.parse().ok()?,
                units: parse_keys(words.next())?,
            },
        ),
        "wall" => Line::Input(tick, Input::Wall(parse_tile(words.next()?)?)),
        "fog" => Line::Input(tick, Input::Fog),
        "gate" => Line::Input(tick, Input::Gate),
        "checksum" => Line::Checksum(tick, u64::from_str_radix(words.next()?, 16).ok()?),
        _ => return None,
    };
    words.next().is_none().then_some(line)
}

/// The first line of a replay: its format and the options the simulation depends on.
const HEADER: &str = "rts-replay 1";

/// A replay read from a file: the options it was recorded with, and its lines.
pub struct Replay {
    /// The recorded run's simulation options, as command-line words.
    pub args: Vec<String>,
    inputs: VecDeque<(u64, Input)>,
    checksums: VecDeque<(u64, u64)>,
}

impl Replay {
    /// Reads a replay, or says what is wrong with it.
    pub fn read(path: &str) -> Result<Replay, String> {
        let file = File::open(path).map_err(|e| format!("--replay {path}: {e}"))?;
        let mut lines = BufReader::new(file).lines();
        let header = lines
            .next()
            .transpose()
            .map_err(|e| format!("--replay {path}: {e}"))?
            .unwrap_or_default();
        let Some(args) = header.strip_prefix(HEADER) else {
            return Err(format!(
                "--replay {path}: not a replay (no \"{HEADER}\" line)"
            ));
        };
        let mut replay = Replay {
            args: args.split_whitespace().map(String::from).collect(),
            inputs: VecDeque::new(),
            checksums: VecDeque::new(),
        };
        let mut last = 0;
        for (n, line) in lines.enumerate() {
            let line = line.map_err(|e| format!("--replay {path}: {e}"))?;
            let bad = || format!("--replay {path}: line {}: cannot read {line:?}", n + 2);
            let parsed = parse_line(&line).ok_or_else(bad)?;
            let tick = match &parsed {
                Line::Input(t, _) | Line::Checksum(t, _) => *t,
            };
            if tick < last {
                return Err(format!("{}: ticks out of order", bad()));
            }
            last = tick;
            match parsed {
                Line::Input(t, input) => replay.inputs.push_back((t, input)),
                Line::Checksum(t, c) => replay.checksums.push_back((t, c)),
            }
        }
        Ok(replay)
    }
}

/// Where the inputs come from and go.
enum Tape {
    /// Given live, not recorded.
    Live,
    /// Given live and written to a file.
    Record(BufWriter<File>),
    /// Read from a replay (live inputs are dropped).
    Replay(Replay),
}

/// The inputs waiting for the next tick, the tick count and the tape.
#[derive(Resource)]
pub struct Inputs {
    pending: Vec<Input>,
    /// Ticks of the simulation's schedule so far.
    tick: u64,
    tape: Tape,
    /// Checksums every this many ticks (printed and, when recording, written); 0: never.
    checksum_every: u64,
    /// Recorded checksums that matched so far, and the first tick one did not.
    pub matched: usize,
    pub desync: Option<u64>,
}

impl Inputs {
    /// From the command line: recording, replaying or neither (a replay's file is read by the
    /// caller, which takes its options first).
    pub fn new(config: &DemoConfig, replay: Option<Replay>) -> Result<Inputs, String> {
        let tape = match (&config.record, replay) {
            (_, Some(replay)) => Tape::Replay(replay),
            (Some(path), None) => {
                let file = File::create(path).map_err(|e| format!("--record {path}: {e}"))?;
                let mut out = BufWriter::new(file);
                writeln!(out, "{HEADER} {}", config.sim_args().join(" "))
                    .and_then(|_| out.flush())
                    .map_err(|e| format!("--record {path}: {e}"))?;
                Tape::Record(out)
            }
            (None, None) => Tape::Live,
        };
        let checksum_every = match config.checksums {
            0 if config.record.is_some() => 60,
            n => n as u64,
        };
        Ok(Inputs {
            pending: Vec::new(),
            tick: 0,
            tape,
            checksum_every,
            matched: 0,
            desync: None,
        })
    }

    /// Gives an input: applied at the start of the next tick (dropped when replaying).
    pub fn give(&mut self, input: Input) {
        self.pending.push(input);
    }

    /// Replaying a file.
    pub fn replaying(&self) -> bool {
        matches!(self.tape, Tape::Replay(_))
    }

    /// Writes a line to the recording, if any (a recording that cannot be written is a lost
    /// replay, not a reason to stop the game: said once).
    fn record(&mut self, line: impl FnOnce() -> String) {
        if let Tape::Record(out) = &mut self.tape
            && let Err(e) = writeln!(out, "{}", line()).and_then(|_| out.flush())
        {
            eprintln!("--record: {e}; recording stopped");
            self.tape = Tape::Live;
        }
    }

    /// The inputs due at this tick: live ones (recorded) or the replay's.
    fn take_due(&mut self) -> Vec<Input> {
        let tick = self.tick;
        let live = std::mem::take(&mut self.pending);
        let due = match &mut self.tape {
            Tape::Replay(replay) => {
                let mut due = Vec::new();
                while replay.inputs.front().is_some_and(|(t, _)| *t <= tick) {
                    due.extend(replay.inputs.pop_front().map(|(_, i)| i));
                }
                due
            }
            _ => live,
        };
        for input in &due {
            self.record(|| format!("{tick} {}", input.to_line()));
        }
        due
    }
}

/// Applies the inputs due at this tick, before the plugin's work (an exclusive system: orders
/// read the units where they stand at the start of the tick).
pub fn apply_inputs(world: &mut World) {
    let due = world.resource_mut::<Inputs>().take_due();
    for input in due {
        match input {
            Input::Order {
                units,
                tile,
                priority,
                shape,
            } => order(world, &units, tile, priority, Mode::Move(shape)),
            Input::Waypoint {
                units,
                tile,
                priority,
            } => order(world, &units, tile, priority, Mode::Waypoint),
            Input::Patrol {
                units,
                tile,
                priority,
            } => order(world, &units, tile, priority, Mode::Patrol),
            Input::Stop { units, hold } => {
                for (entity, _) in units_by_keys(world, &units) {
                    let mut unit = world.entity_mut(entity);
                    if hold {
                        bevy_tilepath::hold_position(unit);
                    } else {
                        unit.remove::<HoldPosition>();
                        bevy_tilepath::stop(unit);
                    }
                }
            }
            Input::Follow {
                units,
                target,
                priority,
            } => follow(world, &units, target, priority),
            Input::Wall(tile) => toggle_wall(world, tile),
            Input::Fog => {
                let mut settings = world.resource_mut::<TilepathSettings>();
                settings.fog.enabled = !settings.fog.enabled;
            }
            Input::Gate => toggle_gate(world),
        }
    }
}

/// How an order joins a unit's orders.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Replaces them, the group standing at the target in a shape.
    Move(Shape),
    /// After them (at once for a unit without any).
    Waypoint,
    /// Replaces them with a patrol between where the unit stands and the target.
    Patrol,
}

/// The units with `keys` (in that order; keys of units gone are skipped), with where they stand
/// (world space).
fn units_by_keys(world: &mut World, keys: &[u64]) -> Vec<(Entity, Vec2)> {
    let mut q = world.query::<(Entity, &LockstepKey, &Transform)>();
    let mut by_key: Vec<(u64, Entity, Vec2)> = q
        .iter(world)
        .map(|(e, k, tf)| (k.0, e, tf.translation.truncate()))
        .collect();
    by_key.sort_unstable_by_key(|u| u.0);
    keys.iter()
        .filter_map(|k| {
            let i = by_key.binary_search_by_key(k, |u| u.0).ok()?;
            Some((by_key[i].1, by_key[i].2))
        })
        .collect()
}

/// Sends the units with `keys` to `tile`, as `mode` says.
fn order(world: &mut World, keys: &[u64], tile: UVec2, priority: i32, mode: Mode) {
    let demo_map = world.resource::<DemoMap>();
    let target = demo_map.cell(tile.x, tile.y);
    // The facing's second tile, on the map.
    let facing_cell = match mode {
        Mode::Move(Shape {
            facing: Some(f), ..
        }) => {
            let to = (tile.as_ivec2() + f).max(IVec2::ZERO).as_uvec2();
            Some(demo_map.cell(to.x, to.y)).filter(|&c| c != target)
        }
        _ => None,
    };
    let units = units_by_keys(world, keys);
    let mut maps = world.query::<&NavMap>();
    let Ok(map) = maps.single(world) else {
        return;
    };
    let units: Vec<(Entity, Vec2)> = units
        .into_iter()
        .map(|(e, p)| (e, map.world_to_grid(p)))
        .collect();
    // Units still on their way (a path to walk, or one coming) take a waypoint after it.
    let busy: Vec<bool> = units
        .iter()
        .map(|&(e, _)| {
            let status = world.get::<PathStatus>(e).copied().unwrap_or_default();
            let walking = world
                .get::<bevy_tilepath::PathProgress>(e)
                .is_some_and(|p| p.state != MoveState::Arrived && p.state != MoveState::Idle);
            matches!(status, PathStatus::Queued | PathStatus::Searching)
                || status == PathStatus::Found && walking
        })
        .collect();
    // A formation walks at its slowest unit's speed.
    let slowest = units
        .iter()
        .filter_map(|&(e, _)| world.get::<Mover>(e).map(|m| m.speed))
        .reduce(f32::min);
    let classed: Vec<(Entity, Vec2, ClassId)> = units
        .iter()
        .map(|&(e, p)| (e, p, ClassId::of(world.get::<ClassId>(e))))
        .collect();
    let mut queue = CommandQueue::default();
    let mut commands = Commands::new(&mut queue, world);
    match mode {
        Mode::Move(shape) => {
            let facing = facing_cell.map(|c| map.cell_to_world(c) - map.cell_to_world(target));
            let formation = (shape.formation, facing);
            order_group(
                &mut commands,
                map,
                &classed,
                (target, priority),
                formation,
                slowest,
            );
        }
        Mode::Waypoint | Mode::Patrol => {
            let world_units: Vec<(Entity, Vec2)> = units
                .iter()
                .map(|&(e, p)| (e, map.grid_to_world(p)))
                .collect();
            let requests = group_order(map, map.cell_to_world(target), &world_units);
            for ((entity, request), (&(_, at), busy)) in
                requests.into_iter().zip(units.iter().zip(busy))
            {
                let request = request.with_priority(priority);
                let mut unit = commands.entity(entity);
                if mode == Mode::Patrol {
                    let home = PathGoal::Cell(map.grid().cell_at(at));
                    unit.remove::<HoldPosition>()
                        .insert((request, OrderQueue::patrol([home])));
                } else if busy {
                    let goal = request.goal;
                    unit.entry::<OrderQueue>()
                        .or_default()
                        .and_modify(move |mut q| q.push(goal));
                } else {
                    unit.remove::<HoldPosition>()
                        .insert((request, OrderQueue::default()));
                }
            }
        }
    }
    queue.apply(world);
}

/// The units with `keys` follow the unit with key `target` (a unit gone: their orders fail as
/// the target's).
fn follow(world: &mut World, keys: &[u64], target: u64, priority: i32) {
    let target = units_by_keys(world, &[target])
        .first()
        .map_or(Entity::PLACEHOLDER, |u| u.0);
    for (entity, _) in units_by_keys(world, keys) {
        let request = PathRequest::follow(target, FOLLOW_RANGE).with_priority(priority);
        world
            .entity_mut(entity)
            .remove::<(OrderQueue, HoldPosition)>()
            .insert(request);
    }
}

/// Toggles a tile between wall and grass (its look too, where it is drawn).
/// Opens or shuts the gate through the long wall (its `NavTileLink`).
fn toggle_gate(world: &mut World) {
    let mut gates = world.query::<(&mut NavTileLink, &DemoLink)>();
    for (mut nav, &kind) in gates.iter_mut(world) {
        if kind == DemoLink::Gate {
            nav.link.open = !nav.link.open;
        }
    }
}

fn toggle_wall(world: &mut World, tile: UVec2) {
    let pos = TilePos {
        x: tile.x,
        y: tile.y,
    };
    let mut maps = world.query::<&TileStorage>();
    let Some(e) = maps.iter(world).find_map(|s| s.checked_get(&pos)) else {
        return;
    };
    let mut tiles = world.query::<(&mut NavTile, Option<&mut TileTextureIndex>)>();
    let Ok((mut nav, texture)) = tiles.get_mut(world, e) else {
        return;
    };
    let wall = nav.0 != BLOCKED;
    let terrain = if wall { Terrain::Wall } else { Terrain::Grass };
    *nav = NavTile(terrain.cost());
    if let Some(mut texture) = texture {
        texture.0 = terrain.texture();
    }
}

/// After the plugin's work: prints the checksum every `--checksums N` ticks, writes it into a
/// recording, checks it against a replay's, and counts the tick.
pub fn checksums(mut inputs: ResMut<Inputs>, checksum: Res<NavChecksum>) {
    let tick = inputs.tick;
    inputs.tick += 1;
    let every = inputs.checksum_every;
    if every > 0 && tick.is_multiple_of(every) {
        println!("checksum tick={tick} value={:016x}", checksum.value);
        inputs.record(|| format!("{tick} checksum {:016x}", checksum.value));
    }
    let inputs = &mut *inputs;
    if let Tape::Replay(replay) = &mut inputs.tape {
        while let Some(&(t, recorded)) = replay.checksums.front() {
            if t > tick {
                break;
            }
            replay.checksums.pop_front();
            if t < tick {
                continue;
            }
            if recorded == checksum.value {
                inputs.matched += 1;
            } else if inputs.desync.is_none() {
                eprintln!(
                    "replay: desync at tick {tick}: checksum {:016x}, recorded {recorded:016x}",
                    checksum.value
                );
                inputs.desync = Some(tick);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back_as_written() {
        let inputs = [
            Input::Order {
                units: vec![3, 17, 4],
                tile: UVec2::new(82, 35),
                priority: 10,
                shape: Shape::default(),
            },
            Input::Order {
                units: vec![3, 17],
                tile: UVec2::new(8, 5),
                priority: 10,
                shape: Shape {
                    formation: Formation::Line,
                    facing: Some(IVec2::new(-3, 2)),
                },
            },
            Input::Order {
                units: vec![3],
                tile: UVec2::new(8, 5),
                priority: 10,
                shape: Shape {
                    formation: Formation::KeepShape,
                    facing: None,
                },
            },
            Input::Order {
                units: vec![],
                tile: UVec2::new(0, 1),
                priority: -2,
                shape: Shape::default(),
            },
            Input::Waypoint {
                units: vec![5, 6],
                tile: UVec2::new(7, 8),
                priority: 10,
            },
            Input::Patrol {
                units: vec![9],
                tile: UVec2::new(1, 2),
                priority: 0,
            },
            Input::Stop {
                units: vec![1, 2, 3],
                hold: false,
            },
            Input::Stop {
                units: vec![4],
                hold: true,
            },
            Input::Follow {
                units: vec![7, 8],
                target: 120,
                priority: 0,
            },
            Input::Wall(UVec2::new(40, 20)),
            Input::Fog,
            Input::Gate,
        ];
        for (tick, input) in inputs.into_iter().enumerate() {
            let line = format!("{tick} {}", input.to_line());
            assert_eq!(parse_line(&line), Some(Line::Input(tick as u64, input)));
        }
        assert_eq!(
            parse_line("120 checksum 3a0c5e7d11f2b904"),
            Some(Line::Checksum(120, 0x3a0c_5e7d_11f2_b904))
        );
        for bad in [
            "",
            "x fog",
            "1 fog extra",
            "1 wall 3",
            "1 order a 1,2 3",
            "1 hold x",
            "1 patrol 0 1 2",
            "1 jump",
        ] {
            assert_eq!(parse_line(bad), None, "{bad:?}");
        }
    }
}
