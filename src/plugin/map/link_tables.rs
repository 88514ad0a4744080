//! The maps' link tables ([`NavGrid::build_link_table`]: the least costs between links' ends
//! that searches estimate with), made on a thread of their own whenever a grid's links change
//! (a link added or removed, a door opened or closed), so that no search waits for one: made
//! by the first search that asks, it took 0.3 ms for 100 ends and 3-5 ms for 256, inside a
//! frame's budget on the main thread for an inline search.
//!
//! The table lives in the grid the searches share, so it makes no difference to what they
//! find, only to when it is made: lockstep runs repeat as before. A search that asks while the
//! thread is at it waits for the thread's table rather than making a second.

use bevy::platform::collections::HashMap;
use bevy::prelude::*;

use crate::core::NavGrid;
use crate::plugin::background::build_apart;
use crate::plugin::classes::ClassId;

use super::NavMap;

/// Starts making the link table of every grid of every map that has links and no table yet
/// (see the module docs), once per grid: `building` holds, by map and class, the grid (and its
/// version) a build was started for.
pub(crate) fn keep_link_tables(
    maps: Query<(Entity, &NavMap)>,
    mut building: Local<HashMap<(Entity, ClassId), (usize, u64)>>,
) {
    building.retain(|(map, _), _| maps.contains(*map));
    for (entity, map) in &maps {
        for class in map.grid_classes() {
            let key = (entity, class);
            let grid = map.grid_of(class);
            if grid.has_link_table() {
                building.remove(&key);
                continue;
            }
            // The grid's address and version: an edit since the build started gave the map a
            // grid of its own (while the thread holds the old one) or changed it in place, and
            // either wants a build of its own.
            let id = (std::ptr::from_ref::<NavGrid>(grid) as usize, grid.version());
            if building.insert(key, id) == Some(id) {
                continue;
            }
            let snapshot = map.snapshot_of(class);
            build_apart("tilepath link table", move || snapshot.build_link_table());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{Cell, Link};
    use std::time::{Duration, Instant};

    /// Updates `app` until `done` (at most 10 s); whether it came.
    fn update_until(app: &mut App, done: impl Fn(&App) -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            app.update();
            if done(app) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn a_maps_link_table_is_made_apart_whenever_its_links_change() {
        let mut app = App::new();
        app.add_systems(Update, keep_link_tables);
        let mut map = NavMap::new(NavGrid::new(32, 32).unwrap(), Vec2::ZERO, Vec2::ONE);
        let door = map
            .add_link(Link::two_way(Cell::new(1, 1), Cell::new(30, 30), 1.0))
            .unwrap();
        map.add_link(Link::one_way(Cell::new(2, 28), Cell::new(28, 2), 2.0))
            .unwrap();
        let e = app.world_mut().spawn(map).id();
        let made = |app: &App| {
            let map = app.world().get::<NavMap>(e).unwrap();
            map.grid().has_link_table()
        };
        assert!(!made(&app), "no search has made it");
        assert!(update_until(&mut app, made), "made with no search asking");
        // A door closes: the table goes with the old links, and is made again.
        let mut map = app.world_mut().get_mut::<NavMap>(e).unwrap();
        map.set_link_open(door, false).unwrap();
        assert!(!made(&app));
        assert!(
            update_until(&mut app, made),
            "made again after the door closed"
        );
    }
}
