//! A [`NavMap`] in a saved game (feature `serialize`): the map's own state, without what the
//! plugin derives from it (islands, class grids, region maps).

use bevy::math::{Affine2, Mat2, Vec2};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::core::{Cell, Knowledge, Link, LinkId, MoveRules, NavGrid};

use super::NavMap;

/// What a saved game holds of a [`NavMap`]: everything the map's owner set or its players saw,
/// and nothing the plugin derives (islands, class grids and region maps are rebuilt on loading).
/// [`NavMap`] is serialized as this value; it is public so a game can read or migrate it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NavMapData {
    /// Width in cells.
    pub width: u32,
    /// Height in cells.
    pub height: u32,
    /// Topology, corner rule and step costs.
    pub rules: MoveRules,
    /// Terrain of every cell, row-major (`0`: blocked).
    pub terrain: Vec<u8>,
    /// The cells with a penalty: `(x, y, penalty)`.
    pub penalties: Vec<(i32, i32, u32)>,
    /// Grid space to world space: the matrix's columns, then the translation.
    pub placement: [f32; 6],
    /// What each player has seen (fog of war): the player, the kind assumed of unseen cells, and
    /// one bit per cell, row-major, 64 to a word.
    pub knowledge: Vec<(u8, u8, Vec<u64>)>,
    /// The links added with [`NavMap::add_link`], by handle (`None`: removed, or placed by a
    /// [`NavLink`](crate::NavLink) entity, which brings its own back when loaded). Empty in
    /// games saved before maps had links.
    #[serde(default)]
    pub links: Vec<Option<Link>>,
}

impl From<&NavMap> for NavMapData {
    fn from(map: &NavMap) -> Self {
        let grid = map.grid();
        let (w, h) = (grid.width(), grid.height());
        let row_major =
            || (0..h as i32).flat_map(move |y| (0..w as i32).map(move |x| Cell::new(x, y)));
        let terrain = row_major().map(|c| grid.terrain(c).unwrap_or(0)).collect();
        let penalties = row_major()
            .filter_map(|c| Some((c.x, c.y, grid.penalty(c).ok().filter(|&p| p > 0)?)))
            .collect();
        let knowledge = map
            .knowledge
            .iter()
            .map(|(player, known)| {
                let mut bits = vec![0u64; (w as usize * h as usize).div_ceil(64)];
                for (i, c) in row_major().enumerate() {
                    if known.is_seen(c) {
                        bits[i / 64] |= 1 << (i % 64);
                    }
                }
                (*player, known.assumed(), bits)
            })
            .collect();
        let links = grid
            .link_slots()
            .iter()
            .enumerate()
            .map(|(k, l)| l.filter(|_| !map.is_entity_link(LinkId(k as u32))))
            .collect();
        let m = map.placement();
        NavMapData {
            width: w,
            height: h,
            rules: grid.rules(),
            terrain,
            penalties,
            placement: [
                m.matrix2.x_axis.x,
                m.matrix2.x_axis.y,
                m.matrix2.y_axis.x,
                m.matrix2.y_axis.y,
                m.translation.x,
                m.translation.y,
            ],
            knowledge,
            links,
        }
    }
}

impl TryFrom<NavMapData> for NavMap {
    type Error = String;

    /// The map again; an error (never a panic) for data that does not describe one: a bad size,
    /// terrain or knowledge of the wrong length, a penalty or a link outside the grid.
    fn try_from(data: NavMapData) -> Result<Self, String> {
        let mut grid = NavGrid::from_terrain(data.width, data.height, data.rules, &data.terrain)
            .map_err(|e| format!("saved NavMap: {e:?}"))?;
        for (x, y, penalty) in data.penalties {
            grid.set_penalty(Cell::new(x, y), penalty)
                .map_err(|e| format!("saved NavMap penalty: {e:?}"))?;
        }
        grid.restore_links(data.links)
            .map_err(|e| format!("saved NavMap link: {e}"))?;
        let words = (data.width as usize * data.height as usize).div_ceil(64);
        let mut knowledge = Vec::with_capacity(data.knowledge.len());
        for (player, assumed, bits) in data.knowledge {
            if bits.len() != words {
                return Err(format!(
                    "saved NavMap: player {player}'s knowledge has {} words, not {words}",
                    bits.len()
                ));
            }
            let mut known = Knowledge::new(&grid, assumed);
            let cells = (0..data.height as i32)
                .flat_map(|y| (0..data.width as i32).map(move |x| Cell::new(x, y)));
            for (i, c) in cells.enumerate() {
                if bits[i / 64] & (1 << (i % 64)) != 0 {
                    known.reveal(c);
                }
            }
            knowledge.push((player, known));
        }
        let [ax, ay, bx, by, tx, ty] = data.placement;
        let placement = Affine2::from_mat2_translation(
            Mat2::from_cols(Vec2::new(ax, ay), Vec2::new(bx, by)),
            Vec2::new(tx, ty),
        );
        let mut map = NavMap::with_placement(grid, placement);
        map.knowledge = knowledge;
        Ok(map)
    }
}

impl Serialize for NavMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        NavMapData::from(self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for NavMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let data = NavMapData::deserialize(deserializer)?;
        NavMap::try_from(data).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::BLOCKED;

    #[test]
    fn a_map_survives_its_saved_form() {
        let mut grid = NavGrid::new(70, 9).unwrap();
        grid.set_terrain(Cell::new(3, 4), BLOCKED).unwrap();
        grid.set_terrain(Cell::new(5, 5), 7).unwrap();
        grid.set_penalty(Cell::new(69, 8), 900).unwrap();
        let mut map = NavMap::with_placement(
            grid,
            Affine2::from_scale_angle_translation(Vec2::new(16.0, 8.0), 0.3, Vec2::new(-5.0, 2.0)),
        );
        // Links: one removed, one closed, one placed by an entity (left out of the save).
        let gone = map
            .add_link(Link::two_way(Cell::new(1, 1), Cell::new(60, 1), 1.0))
            .unwrap();
        let door = Link::one_way(Cell::new(2, 2), Cell::new(9, 2), 2.5).closed();
        let door_id = map.add_link(door).unwrap();
        map.remove_link(gone).unwrap();
        map.add_entity_link(Link::two_way(Cell::new(0, 0), Cell::new(3, 3), 1.0))
            .unwrap();
        let mut known = Knowledge::new(map.grid(), 1);
        known.reveal(Cell::new(0, 0));
        known.reveal(Cell::new(69, 8));
        map.knowledge.push((2, known.clone()));
        let data = NavMapData::from(&map);
        let back = NavMap::try_from(data.clone()).unwrap();
        assert_eq!(NavMapData::from(&back), data);
        assert_eq!(back.grid().terrain(Cell::new(3, 4)), Ok(BLOCKED));
        assert_eq!(back.grid().terrain(Cell::new(5, 5)), Ok(7));
        assert_eq!(back.grid().penalty(Cell::new(69, 8)), Ok(900));
        assert_eq!(back.knowledge(2), Some(&known));
        assert!(back.placement().abs_diff_eq(map.placement(), 1e-6));
        assert_eq!(data.links, [None, Some(door), None]);
        assert_eq!(back.grid().link(door_id), Some(&door));
        assert_eq!(back.grid().links().count(), 1);
    }

    #[test]
    fn bad_saved_maps_are_errors() {
        let map = NavMap::new(NavGrid::new(8, 8).unwrap(), Vec2::ZERO, Vec2::ONE);
        let good = NavMapData::from(&map);
        let mut short = good.clone();
        short.terrain.pop();
        assert!(NavMap::try_from(short).is_err());
        let mut outside = good.clone();
        outside.penalties.push((8, 0, 5));
        assert!(NavMap::try_from(outside).is_err());
        let mut knowledge = good.clone();
        knowledge.knowledge.push((1, 1, vec![0; 2]));
        assert!(NavMap::try_from(knowledge).is_err());
        let mut link = good.clone();
        link.links
            .push(Some(Link::two_way(Cell::new(0, 0), Cell::new(8, 0), 1.0)));
        assert!(NavMap::try_from(link).is_err());
        let mut empty = good;
        (empty.width, empty.terrain) = (0, Vec::new());
        assert!(NavMap::try_from(empty).is_err());
    }
}
