//! Links as entities ([`NavLink`]): a game (or a tilemap's tile) places a door, a drop or a
//! teleporter as an entity pointing at its map, and the plugin keeps the map's links in step
//! with those entities: added when spawned, changed when the component changes (a door opened or
//! closed only opens or closes the link), removed when the entity or its component goes.

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;

use crate::core::{Link, LinkId};

use super::NavMap;

/// A link of a map as an entity: the map it is on (the entity with the [`NavMap`]) and the
/// link ([`Link`]: two cells, a cost in tiles, one way or both, open or closed). Change `link`
/// to open or close it; despawn the entity (or remove the component) to take it away.
///
/// ```
/// use bevy::prelude::*;
/// use bevy_tilepath::core::Link;
/// use bevy_tilepath::prelude::*;
/// use bevy_tilepath::NavLink;
///
/// let mut app = App::new();
/// app.add_plugins((MinimalPlugins, TilepathPlugins::default()));
/// let map = app
///     .world_mut()
///     .spawn(NavMap::new(NavGrid::new(20, 10).unwrap(), Vec2::ZERO, Vec2::ONE))
///     .id();
/// let door = Link::two_way(Cell::new(8, 5), Cell::new(11, 5), 1.0);
/// let entity = app.world_mut().spawn(NavLink { map, link: door }).id();
/// app.update();
/// let grid = app.world().get::<NavMap>(map).unwrap().grid();
/// assert_eq!(grid.links().map(|(_, l)| *l).collect::<Vec<_>>(), [door]);
///
/// // Shut the door: the link stays, closed.
/// app.world_mut().get_mut::<NavLink>(entity).unwrap().link.open = false;
/// app.update();
/// let grid = app.world().get::<NavMap>(map).unwrap().grid();
/// assert!(!grid.links().next().unwrap().1.open);
///
/// app.world_mut().despawn(entity);
/// app.update();
/// assert!(!app.world().get::<NavMap>(map).unwrap().grid().has_links());
/// ```
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Component)]
pub struct NavLink {
    /// The map entity.
    #[entities]
    pub map: Entity,
    /// The link.
    pub link: Link,
}

/// Where each [`NavLink`] entity's link is (its map, its handle there, and the link as placed),
/// and the link entities whose map entity has no [`NavMap`] yet (a tilemap's is built a frame
/// or two after it is spawned).
#[derive(Resource, Default)]
pub(crate) struct PlacedLinks {
    placed: EntityHashMap<(Entity, LinkId, Link)>,
    waiting: Vec<Entity>,
}

/// Brings the maps' links in step with the [`NavLink`] entities (removed first, then new and
/// changed ones in entity order, so every client gives the same handles). A link whose map
/// entity has no [`NavMap`] yet waits for it (a warning says so once); a link a map refuses (an
/// end off the grid, a bad cost) is reported as a warning and left out.
pub(crate) fn sync_links(
    mut links: ResMut<PlacedLinks>,
    changed: Query<(Entity, &NavLink), Changed<NavLink>>,
    all: Query<&NavLink>,
    mut removed: RemovedComponents<NavLink>,
    mut maps: Query<&mut NavMap>,
) {
    let PlacedLinks { placed, waiting } = &mut *links;
    for entity in removed.read() {
        waiting.retain(|&e| e != entity);
        if let Some((map, id, _)) = placed.remove(&entity)
            && let Ok(mut map) = maps.get_mut(map)
        {
            let _ = map.remove_link(id);
        }
    }
    let waited = std::mem::take(waiting);
    let mut changed: Vec<(Entity, NavLink)> = changed.iter().map(|(e, l)| (e, *l)).collect();
    changed.extend(waited.iter().filter_map(|&e| Some((e, *all.get(e).ok()?))));
    changed.sort_unstable_by_key(|&(e, _)| e);
    changed.dedup_by_key(|&mut (e, _)| e);
    for (entity, nav) in changed {
        let before = placed.get(&entity).copied();
        if let Some((map, id, old)) = before
            && map == nav.map
            && (Link {
                open: nav.link.open,
                ..old
            }) == nav.link
        {
            if let Ok(mut map) = maps.get_mut(map)
                && map.set_link_open(id, nav.link.open).is_ok()
            {
                placed.insert(entity, (nav.map, id, nav.link));
            }
            continue;
        }
        if let Some((map, id, _)) = before
            && let Ok(mut map) = maps.get_mut(map)
        {
            let _ = map.remove_link(id);
        }
        placed.remove(&entity);
        let Ok(mut map) = maps.get_mut(nav.map) else {
            if !waited.contains(&entity) {
                warn!(
                    "NavLink on {entity}: {} has no NavMap (yet): it waits for one",
                    nav.map
                );
            }
            waiting.push(entity);
            continue;
        };
        match map.add_entity_link(nav.link) {
            Ok(id) => {
                placed.insert(entity, (nav.map, id, nav.link));
            }
            Err(e) => warn!("NavLink on {entity}: {e}"),
        }
    }
}
