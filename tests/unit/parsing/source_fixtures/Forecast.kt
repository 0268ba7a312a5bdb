package com.example.weather

import kotlin.math.roundToInt

/**
 * Daily forecasts for one place.
 */
data class Forecast(val place: String, val days: List<Day>) {

    /** One day's weather. */
    data class Day(val highC: Double, val lowC: Double, val rainMm: Double)

    /**
     * The warmest day, or null when there are no days.
     */
    @Deprecated("Use hottest()")
    fun warmest(): Day? {
        if (days.isEmpty()) {
            return null
        }

        return days.maxByOrNull { it.highC }
    }

    /** The total rain over all days, in millimetres. */
    fun totalRain(): Double {
        return days.sumOf { it.rainMm }
    }
}

/** The mean of the daily highs, rounded to a whole degree. */
@Suppress("MagicNumber")
fun meanHigh(forecast: Forecast): Int {
    val total = forecast.days.sumOf { it.highC }

    return (total / forecast.days.size).roundToInt()
}
