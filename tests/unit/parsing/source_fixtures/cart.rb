# frozen_string_literal: true

require "bigdecimal"

module Shop
  # A shopping cart that totals its items with discounts applied.
  class Cart
    attr_reader :items

    def initialize(currency = "EUR")
      @currency = currency
      @items = []
    end

    # Adds +quantity+ of an item at +price+ each.
    #
    # Returns the cart, so calls can be chained.
    def add(sku, price, quantity: 1)
      raise ArgumentError, "quantity must be positive" unless quantity.positive?

      @items << { sku: sku, price: BigDecimal(price.to_s), quantity: quantity }
      self
    end

    # The total, with +discount+ (a fraction) taken off.
    def total(discount: 0)
      gross = @items.sum { |item| item[:price] * item[:quantity] }
      (gross * (1 - discount)).round(2)
    end
  end

  # Formats an amount of money for display, like "12.50 EUR".
  def self.format_money(amount, currency)
    whole = amount.round(2)

    format("%.2f %s", whole, currency)
  end
end
