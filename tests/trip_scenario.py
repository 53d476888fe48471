"""The trip-planner scenario the debugging tests share: a capture taken by the first step and read by
a condition of the second (``contains "{{city}}"``), and a condition a sold-out result fails."""

TRIP = """\
scenario "Trip planner":
    step ask_city:
        when:
            last user message contains "trip to"
        capture city from last user message /trip to (\\w+)/
        reply:
            tool call search_flights {"city": "{{city}}"}

    step flights_found:
        when:
            tool result for "search_flights" contains "{{city}}"
            tool result for "search_flights" not contains "sold out"
        reply:
            text "Flights to {{city}} found."
"""
