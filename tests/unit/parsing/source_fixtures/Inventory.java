package com.example.inventory;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Stock levels of the items in one warehouse.
 */
public final class Inventory {
    private final Map<String, Integer> stock = new HashMap<>();

    /**
     * Adds {@code count} units of an item.
     *
     * @param sku the item's stock-keeping unit
     * @param count how many units arrived
     */
    public void receive(String sku, int count) {
        if (count <= 0) {
            throw new IllegalArgumentException("count must be positive: " + count);
        }
        stock.merge(sku, count, Integer::sum);
    }

    /** Removes units of an item, if enough are in stock. */
    @SuppressWarnings("unused")
    public synchronized boolean ship(String sku, int count) {
        int have = stock.getOrDefault(sku, 0);
        if (have < count) {
            return false;
        }

        stock.put(sku, have - count);
        return true;
    }

    @Override
    public String toString() {
        return "Inventory" + stock;
    }

    /** The units in stock of an item, if it was ever received. */
    public static Optional<Integer> levelOf(Inventory inventory, String sku) {
        Integer level = inventory.stock.get(sku);

        return Optional.ofNullable(level);
    }
}
