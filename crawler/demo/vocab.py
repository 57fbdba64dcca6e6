"""The words the demo news sites are written with: sections, headline and sentence templates, names.

Templates take ``{slot}`` fields (filled per article by :mod:`crawler.demo.sites`) and ``[one|other]``
alternatives (one picked at random, seeded). ``{Slot}`` is the same value with a capital first letter.
Every name is invented; the places, firms and people do not exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CITYNEWS", "HUAXIA", "TECHDAILY", "SectionVocab", "SiteVocab"]


@dataclass(frozen=True, slots=True)
class SectionVocab:
    """One section of a site: what its stories are about and how they are told."""

    name: str
    slug: str
    subjects: tuple[str, ...]  # what a story is about: {subject}
    headlines: tuple[str, ...]
    leads: tuple[str, ...]  # the first sentence; the n-th goes with the n-th headline
    sentences: tuple[str, ...]  # the section's own sentences, mixed with the site's shared ones
    names: dict[str, tuple[str, ...]] = field(default_factory=dict)  # slot values only this section uses


@dataclass(frozen=True, slots=True)
class SiteVocab:
    """A site's voice: its sections, shared sentences, quotes, bylines and the names slots draw from."""

    sections: tuple[SectionVocab, ...]
    shared: tuple[str, ...]
    quotes: tuple[str, ...]
    authors: tuple[str, ...]
    names: dict[str, tuple[str, ...]]  # slot name -> values


# --- City News: a local daily of an invented English city -------------------------------------------------

CITYNEWS = SiteVocab(
    sections=(
        SectionVocab(
            "City",
            "city",
            (
                "a new public library",
                "four hundred affordable homes",
                "a community health centre",
                "the restoration of the old fire station",
                "a riverside park",
                "the extension of the primary school",
                "new street lighting on the main roads",
                "a covered market hall",
            ),
            (
                "Council approves {subject} in {place}",
                "{Place} residents divided over plans for {subject}",
                "Plans for {subject} in {place} delayed until {month}",
                "{Place} to get {subject} after years of campaigning",
                "Cost of {subject} in {place} rises to {money}",
            ),
            (
                "Plans for {subject} in {place} were approved on {weekday}, ending [a long dispute|months"
                " of uncertainty] over the future of the site.",
                "Plans for {subject} have divided residents of {place}, with [hundreds of people|more than"
                " {n} people] [signing a petition against them|writing to the council] before {org} votes"
                " in {month}.",
                "Residents of {place} will have to wait until at least {month} for {subject}, after {org}"
                " [postponed|pushed back] a key vote.",
                "{Org} has given the go-ahead for {subject} in {place}, at an estimated cost of {money},"
                " after years of campaigning by local residents.",
                "The cost of {subject} in {place} has risen to {money}, [almost double|well above] the"
                " figure given when the plans were first announced.",
            ),
            (
                "The site, which has stood empty since {year}, was bought by the council for {money2}.",
                "Architects have promised that the building will use [solar panels and a heat pump|rainwater"
                " harvesting and a green roof], cutting running costs by about a third.",
                "Some neighbours fear that the work will add to the parking problems that already affect"
                " [the narrow streets of {place}|{place} on market days].",
                '{Who} called it "the most important investment in {place} for a generation".',
                "The council's housing list has grown by {pct} per cent in [two|three] years, and officers"
                " say demand is highest in {place} and {place2}.",
            ),
        ),
        SectionVocab(
            "Transport",
            "transport",
            (
                "the new tram line",
                "the night bus network",
                "the riverside cycle path",
                "the rebuilt central station",
                "the low-traffic zone",
                "the ring road bridge",
                "the park-and-ride scheme",
                "the harbour ferry service",
            ),
            (
                "Work on {subject} to start in {place} next {month}",
                "Delays to {subject} frustrate {place} commuters",
                "{Subject} to run over budget by {money}",
                "{Place} traders fear disruption from {subject}",
                "Transport authority defends {subject} after complaints",
            ),
            (
                "Commuters in {place} face [months|a year] of disruption after the transport authority"
                " confirmed that work on {subject} will begin in {month}.",
                "Passengers using {subject} have [complained|written to the council] about [late"
                " running|cancelled services and crowded platforms] since the summer, and commuters in"
                " {place} say their patience is running out.",
                "{Subject} will cost {money} more than planned, the transport authority admitted on"
                " {weekday}.",
                "Shop owners in {place} say the work on {subject} could drive customers away [for"
                " months|just before the busiest time of the year].",
                "The transport authority has defended {subject} after [a wave of|hundreds of] complaints"
                " from residents of {place} and {place2}.",
            ),
            (
                "Buses on the number {route} route will be diverted through {place2} while the road is"
                " closed.",
                "The transport authority said journey times between {place} and the city centre would fall"
                " by {n2} minutes once the work is finished.",
                "Cycling groups said the plans did not go far enough and called for [protected lanes|a"
                " separate bridge for bikes].",
                "Passenger numbers have grown by {pct} per cent since {year}, putting pressure on [the"
                " existing services|a network built for a smaller city].",
                "Drivers have been advised to allow extra time and to use the park-and-ride sites on the edge"
                " of the city.",
                "A survey of {n} passengers found that reliability mattered more to them than speed or"
                " price.",
            ),
        ),
        SectionVocab(
            "Business",
            "business",
            (
                "Harbourline Foods",
                "Millbrook Brewery",
                "Kestrel Logistics",
                "Northgate Textiles",
                "Bluewater Marine",
                "Quayside Print Works",
                "Ashford Bakeries",
                "Elm Street Furniture",
            ),
            (
                "{Subject} to create {jobs} jobs in {place}",
                "{Subject} reports record year as sales rise {pct} per cent",
                "{Subject} to close {place} site with loss of {jobs} jobs",
                "{Subject} opens new warehouse at {place}",
                "Family firm {subject} sold to national rival",
            ),
            (
                "{Subject}, one of the city's largest private employers, announced on {weekday} that it"
                " [will expand|plans to expand] its site in {place}, creating {jobs} jobs.",
                "{Subject} has reported [a record year|its best results in a decade], with sales up {pct}"
                " per cent on the previous year.",
                "Staff at {subject} in {place} were told on {weekday} that the site will close [next"
                " spring|by the end of the year], with the loss of {jobs} jobs.",
                "{Subject} has opened a new warehouse at {place}, bringing its distribution under one roof"
                " for the first time.",
                "{Subject}, [run by the same family|family-owned] since {year}, has been sold to a national"
                " rival for an undisclosed sum.",
            ),
            (
                "The company, founded in {year}, employs about {n} people across the region.",
                "Unions said they would seek urgent talks with management about pay and working hours.",
                "Energy costs, which rose sharply last winter, remain the biggest worry for manufacturers in"
                " the city, according to the chamber of commerce.",
                "The chief executive said the business had benefited from a [strong|steady] export market"
                " and a loyal local customer base.",
                "Economists at the university said the announcement was a sign that the local economy was"
                " [recovering|holding up] better than expected.",
                "The chamber of commerce estimates that every job at the site supports two more in the"
                " supply chain.",
            ),
        ),
        SectionVocab(
            "Culture",
            "culture",
            (
                "the city museum",
                "the Palace Theatre",
                "the jazz festival",
                "the summer book fair",
                "the harbour light show",
                "the city orchestra",
                "the Old Town film festival",
                "the craft market",
            ),
            (
                "{Subject} returns with its biggest programme yet",
                "{Subject} celebrates {n2} years with free events",
                "Funding cut puts future of {subject} in doubt",
                "Record crowds for {subject} in {place}",
                "{Subject} to move to {place} next year",
            ),
            (
                "{Subject} will return to {place} in {month} with its biggest programme yet, [more"
                " than|over] {n2} weeks of events, many of them free.",
                "{Subject} is marking {n2} years [since it began|since its first season] with a weekend of"
                " free events in {place}.",
                "The future of {subject} is in doubt after the council cut its grant by {pct} per cent.",
                "{Subject} [drew|attracted] more than {n} visitors in {place} [over the weekend|in its"
                " first week], according to the organisers.",
                "{Subject} will move to a new home in {place} next year, under a {money} deal agreed with"
                " the council.",
            ),
            (
                "Tickets go on sale next {weekday}, with discounts for students and people over sixty-five.",
                "The organisers said that local volunteers had [made the event possible|given thousands of"
                " hours of their time].",
                "Hotels and restaurants in {place} reported one of their busiest weekends of the year.",
                "The artistic director said the programme was meant to [bring new audiences|attract younger"
                " people] to the arts.",
                "A crowdfunding appeal to cover the shortfall has so far raised {money2}.",
                "Schools in the city will be offered free workshops and guided visits during the autumn"
                " term.",
            ),
        ),
        SectionVocab(
            "Sport",
            "sport",
            (
                "Riverside Rovers",
                "Northgate Athletic",
                "the Harbour Hawks",
                "Millbrook United",
                "the city rowing club",
                "Cannon Hill Cricket Club",
                "the Quayside Runners",
                "Westfield Rugby Club",
            ),
            (
                "{Subject} win derby in front of {n} fans",
                "{Subject} unveil plans for a new ground in {place}",
                "{Subject} appoint new head coach after difficult season",
                "{Subject} promoted after dramatic final day",
                "Council backs {subject} bid for training pitches in {place}",
            ),
            (
                "{Subject} [beat|overcame] their local rivals on {weekday} in front of a crowd of more than"
                " {n}.",
                "{Subject} have [unveiled|published] plans for a new ground in {place}, with room for {n}"
                " spectators.",
                "{Subject} have appointed a new head coach after a [difficult|disappointing] season.",
                "{Subject} [secured|clinched] promotion on {weekday} after a dramatic final day that [went"
                " down to the last minute|few supporters will forget].",
                "{Org} has backed a bid by {subject} to build training pitches in {place}, at a cost of"
                " {money}.",
            ),
            (
                "The club, founded in {year}, has [long|for years] outgrown its current home.",
                "Supporters' groups said they had been consulted and broadly backed the plans.",
                "The new facilities would also be open to schools and community teams during the week.",
                "Season ticket sales have risen by {pct} per cent, the club said.",
                "Neighbours have raised concerns about parking and noise on match days.",
                "The chairman said the club's future depended on finding a home it could afford.",
            ),
        ),
    ),
    shared=(
        "The decision was taken at a [meeting|session] of {org} on {weekday} evening after a debate that"
        " lasted more than {hours} hours.",
        "{Surname} said the council had listened to residents and changed the plans [twice|several times]"
        " since they were first published.",
        "Opposition councillors said the figures did not add up and asked for an independent review [before"
        " any money is spent|of the costs].",
        "A public consultation will run until the end of {month}, and residents can comment online or at"
        " {venue}.",
        '{Resident}, {resident_desc}, said: "{quote}"',
        "According to figures published by {org}, complaints from {place} rose by {pct} per cent last year.",
        "The council expects to publish a detailed timetable in {month}, once the contracts have been"
        " signed.",
        "Local businesses in {place} have been told they can apply for support if the work affects their"
        " trade.",
        "Campaigners, who collected more than {n} signatures last year, welcomed the news but said they"
        " would keep watching [closely|how the money is spent].",
        "The last comparable project in the city, completed in {year}, finished {n2} months late and well"
        " over budget.",
        "A spokesperson for {org} said further details would be shared with residents at a drop-in session"
        " next {weekday}.",
        "Councillors from all parties agreed that something had to be done, but disagreed on how quickly.",
        "Around {n} households in {place} are expected to be affected [in one way or another|directly].",
        "The city's [auditors|finance committee] will review the spending every six months, the report said.",
        "{Surname} admitted that the timetable was tight but said the money had to be spent before the end"
        " of the financial year.",
        "Residents who want to find out more can read the full report on the council's website.",
        "Traffic in {place2} is expected to be diverted for about {n2} weeks while the first stage of the"
        " work is carried out.",
        "The proposal will now go to the planning committee, which meets again in {month}.",
    ),
    quotes=(
        "We have waited a long time for this, and I just hope they get it right.",
        "Nobody asked us what we wanted. The plans were decided long before the consultation.",
        "It will make a real difference to families round here, especially in the winter.",
        "I'm not against it, but the noise and the traffic will be hard on older people.",
        "This is good news for the whole street, and for the shops that have struggled.",
        "We'll believe it when we see the diggers. We have heard promises like this before.",
    ),
    authors=(
        "Jane Holloway",
        "Mark Ellison",
        "Aisha Rahman",
        "Peter Quinn",
        "Sophie Barker",
        "Daniel Cho",
        "Ruth Adebayo",
        "Owen Price",
    ),
    names={
        "place": (
            "Riverside",
            "Old Town",
            "Northgate",
            "the Harbour District",
            "Millbrook",
            "the East End",
            "Westfield",
            "Cannon Hill",
            "the Elm Quarter",
            "Ashford Park",
            "St Anne's",
            "Quayside",
        ),
        "who": (
            "Mayor Helen Marsh",
            "councillor David Okafor",
            "deputy mayor Priya Raman",
            "council leader Tom Whitfield",
            "councillor Grace Lindqvist",
            "councillor Samuel Adeyemi",
        ),
        "org": (
            "the city council",
            "the council's cabinet",
            "the planning committee",
            "the regional development agency",
        ),
        "resident": (
            "Margaret Doyle|who has run a bakery in {place} for {n2} years",
            "Kevin Marsh|a taxi driver who lives in {place}",
            "Fatima Hussain|a teacher and mother of three",
            "George Papadopoulos|who chairs the {place} residents' association",
            "Lucy Brennan|a nurse at the university hospital",
            "Arjun Mehta|who owns a hardware shop on the high street",
        ),
        "venue": ("the central library", "the town hall", "the community centre in {place}"),
        "month": (
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "September",
            "October",
            "December",
        ),
        "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    },
)


# --- TechDaily: a technology news site --------------------------------------------------------------------

TECHDAILY = SiteVocab(
    sections=(
        SectionVocab(
            "AI",
            "ai",
            (
                "a speech model that runs on phones",
                "an open-weight translation model",
                "an AI assistant for hospital doctors",
                "a code review assistant",
                "a chip for running language models",
                "a search engine built on language models",
            ),
            (
                "{Company} launches {subject}",
                "{Company} bets its future on {subject}",
                "Can {subject} from {company} live up to the hype?",
                "{Company} opens {subject} to outside developers",
                "Regulators question {company} over {subject}",
            ),
            (
                "{Company} on {weekday} [unveiled|launched] {subject}, [its most ambitious product so"
                " far|the latest attempt to bring AI into everyday work].",
                "{Company} has staked its future on {subject}, its chief executive told staff on {weekday}.",
                "{Company} says {subject} [makes half as many mistakes|is twice as fast] as the systems it"
                " replaces, a claim that has yet to be tested independently.",
                "After months of delays, {company} has opened {subject} to outside developers.",
                "Regulators in [Brussels|two European countries] have asked {company} to explain how"
                " {subject} handles personal data.",
            ),
            (
                "The model was trained on [licensed data|a mix of public and licensed text], the company"
                " said, though it declined to list its sources.",
                "Running large models is expensive, and {company} hopes that [smaller, cheaper|specialised]"
                " systems will win over business customers.",
                "Researchers warned that systems of this kind still [make things up|produce confident"
                " mistakes] and need human checks.",
                "The company said it would publish results on standard benchmarks within {n2} weeks.",
                "Training took about {n2} weeks on [several thousand|a few hundred] chips, according to the"
                " technical report.",
            ),
        ),
        SectionVocab(
            "Gadgets",
            "gadgets",
            (
                "a foldable e-reader",
                "a smartwatch with a week of battery life",
                "a repairable laptop",
                "noise-cancelling earbuds",
                "a budget tablet for schools",
                "a solar phone charger",
            ),
            (
                "{Company} unveils {subject}",
                "Hands-on with {subject} from {company}",
                "{Company} cuts the price of {subject}",
                "{Company} delays {subject} until {month}",
                "Why {company} is betting on {subject}",
            ),
            (
                "{Company} has [unveiled|shown off] {subject} at an event in {city}, promising [better"
                " battery life|a lower price] than anything else on the market.",
                "We spent a week with {subject} from {company}, and [it mostly lives up to the promises|the"
                " results were mixed].",
                "{Company} has cut the price of {subject} by {pct} per cent, [less than a year after"
                " launch|ahead of the holiday season].",
                "{Company} has pushed back the launch of {subject} to {month}, blaming [supply problems|a"
                " shortage of parts].",
                "{Company} is betting heavily on {subject}, [a product few people asked for|in a market"
                " crowded with rivals], but analysts say the bet may pay off.",
            ),
            (
                "The device weighs {grams} grams and comes in [three|two] colours.",
                "Battery life in our tests was [close to|a little short of] what the company claims.",
                "Every part can be replaced with a standard screwdriver, and spare parts will be sold"
                " online.",
                "The screen is bright enough to read outdoors, though [it picks up fingerprints easily|the"
                " colours look slightly washed out].",
                "Reviewers who received early units [praised the build quality|criticised the software].",
            ),
        ),
        SectionVocab(
            "Security",
            "security",
            (
                "a flaw in home routers",
                "a ransomware attack on a hospital group",
                "a leak of customer passwords",
                "a fake software update campaign",
                "a bug in a popular VPN app",
                "a phishing kit sold to criminals",
            ),
            (
                "Researchers find {subject}",
                "{Company} confirms {subject}",
                "What we know about {subject}",
                "{Company} patches {subject} after warning",
                "Police investigate {subject} linked to {company}",
            ),
            (
                "Security researchers have [discovered|disclosed] {subject} that could affect [millions of"
                " users|about {n} organisations].",
                "{Company} confirmed on {weekday} that it had been hit by {subject}, [weeks|days] after"
                " researchers first warned about it.",
                "Much is still unclear about {subject}, first reported on {weekday}, but a picture of what"
                " happened is starting to emerge.",
                "{Company} has released a fix for {subject}, and users are being urged to update [as soon"
                " as possible|immediately].",
                "Police are investigating {subject} linked to {company}, which [has been used|may have been"
                " used] against [small businesses|thousands of customers].",
            ),
            (
                "The researchers said they had told the company {n2} days before going public, as is"
                " standard practice.",
                "There is no evidence so far that the flaw has been used in attacks, the company said.",
                "Users should change their passwords and turn on two-factor authentication, experts advised.",
                "The national cyber security agency said it was working with the company to understand the"
                " impact.",
                "Attacks of this kind have risen by {pct} per cent in the past year, according to industry"
                " figures.",
            ),
        ),
        SectionVocab(
            "Startups",
            "startups",
            (
                "a grocery delivery app",
                "a payroll platform for small firms",
                "a battery recycling plant",
                "an app for booking tradespeople",
                "a vertical farming business",
                "a marketplace for used lab equipment",
            ),
            (
                "{Company} raises {money} for {subject}",
                "{Company} shuts down {subject}",
                "Investors back {company} and its plans for {subject}",
                "{Company} takes {subject} to Europe",
                "The founders of {company} on building {subject}",
            ),
            (
                "{Company}, the start-up behind {subject}, has raised {money} in a round led by [a group of"
                " European investors|two venture capital firms].",
                "{Company} will close {subject} at the end of {month}, [after failing to find a"
                " buyer|citing rising costs].",
                "A group of investors has backed {company} and its plans for {subject} with {money},"
                " [despite a difficult market|in one of the largest rounds of the year].",
                "{Company} plans to take {subject} to [five|six] European countries next year.",
                "The founders of {company} spent [two|three] years building {subject} before they found"
                " their first paying customer.",
            ),
            (
                "The company said it would use the money to hire about {n2} engineers and expand into new"
                " markets.",
                "Venture funding for young companies has fallen for [two|three] years running, making rounds"
                " of this size rare.",
                "The founders met at university in {city} and started the business in a [spare"
                " bedroom|shared office].",
                "The company is not yet profitable but expects to break even by {year2}, its chief executive"
                " said.",
                "Competition is fierce, with at least {n2} rivals chasing the same customers.",
            ),
        ),
        SectionVocab(
            "Mobility",
            "mobility",
            (
                "an electric delivery van",
                "a driverless shuttle bus",
                "a network of fast chargers",
                "an e-bike sharing scheme",
                "a battery-swapping station for scooters",
                "a hydrogen truck",
            ),
            (
                "{Company} starts trials of {subject}",
                "{Company} unveils {subject} for city streets",
                "Cities sign up for {subject} from {company}",
                "{Company} recalls {subject} after faults",
                "Is {subject} the future of urban transport?",
            ),
            (
                "{Company} has begun trials of {subject} in {city}, [the first|one of the first] in Europe.",
                "{Company} has unveiled {subject} designed for city streets, and says it could cut"
                " [delivery costs|emissions] by {pct} per cent within five years.",
                "[Three|Four] cities, including {city}, have signed up for {subject} from {company}.",
                "{Company} is recalling {subject} after [drivers|operators] reported [braking"
                " faults|battery problems].",
                "{Company} says {subject} is the future of urban transport, but [not everyone is"
                " convinced|city planners are less sure].",
            ),
            (
                "The trial will run for {n2} months on a fixed route, with a safety driver on board at all"
                " times.",
                "City officials said they wanted to see data on safety and reliability before approving a"
                " wider rollout.",
                "Charging remains the biggest obstacle, with too few fast chargers outside the largest"
                " cities.",
                "The company builds the vehicles at a plant near {city} and plans to double production next"
                " year.",
                "Transport researchers said the technology was promising but that costs would have to fall"
                " further.",
            ),
        ),
    ),
    shared=(
        "{Company} did not say how many it expects to sell, but analysts at {firm} estimate [several hundred"
        " thousand|about {n} a month] in the first year.",
        "The announcement comes as [rivals|larger competitors] cut prices and [fight for a shrinking"
        " market|race to ship similar products].",
        "{Ceo}, the chief executive of {company}, told TechDaily that the team had spent {n2} months"
        " [testing|refining] it with early customers.",
        '"{quote}" {surname} said.',
        "Privacy advocates [warned|cautioned] that the company had not explained what data it collects or"
        " how long it keeps it.",
        "Independent tests are still to come, and early claims about performance [should be treated with"
        " care|are hard to check].",
        "{Company}, founded in {year}, has raised {money2} from investors [so far|to date] and employs about"
        " {n} people.",
        "Shares in [listed rivals|the company's suppliers] [rose|fell] {pct2} per cent on the news.",
        "A regulator in the EU said it was [looking at|aware of] the plans but had not opened a formal"
        " inquiry.",
        "{Company} said the first customers would [get access|receive orders] in {month}, with a wider"
        " rollout [later in the year|next spring].",
        "The company published a [technical report|white paper] with the launch, though it [left out key"
        " details|did not release the underlying data].",
        "{Analyst}, an analyst at {firm}, said the move [made sense|was overdue] but that execution would be"
        " everything.",
        "Developers who tried early versions [praised the speed|complained about bugs] but said the"
        " documentation needed work.",
        "The price will start at {price}, [roughly in line with|slightly below] what competitors charge.",
        "Critics point out that similar promises from [other firms|the industry] have often [fallen"
        " short|taken years to deliver].",
        "Customers in the US and Europe will be first; other markets will follow, the company said.",
    ),
    quotes=(
        "We built this for people who are tired of waiting for technology to catch up with them.",
        "The hard part was not the idea, it was making it cheap enough to matter.",
        "We would rather ship something small that works than something big that doesn't.",
        "Nobody has solved this problem yet, and we don't claim to have solved it completely either.",
        "Our customers told us what they needed, and for once we actually listened.",
    ),
    authors=(
        "Nora Lindgren",
        "Sam Patel",
        "Elena Rossi",
        "Chris Mbeki",
        "Hannah Frost",
        "Tomás Rivera",
        "Yuki Tanaka",
        "Ben Okoro",
    ),
    names={
        "company": (
            "Nimbus Labs",
            "Quantix",
            "Brightwave",
            "Corvid Systems",
            "Lumen Robotics",
            "Tessellate",
            "Arcfield",
            "Halyard Networks",
            "Oriel Semiconductors",
            "Sable Security",
            "Kitewing",
            "Marlowe Motors",
            "Fernhill Energy",
            "Parallax Health",
        ),
        "ceo": (
            "Dana Whitaker",
            "Rafael Ortiz",
            "Mei Lin Chow",
            "Jonas Berg",
            "Amara Nwosu",
            "Sofia Marino",
            "Kenji Watanabe",
            "Laura Pietersen",
        ),
        "analyst": ("Ben Hollis", "Clara Voss", "Idris Bello", "Maya Sørensen", "Paul Kowalski"),
        "firm": ("Greyline Research", "Northbeam Analytics", "Kepler & Shaw", "Atlas Insight"),
        "city": ("Berlin", "Lisbon", "Austin", "Toronto", "Singapore", "Helsinki", "Dublin", "Barcelona"),
        "price": ("$149", "$199", "$249", "$299", "$399", "$499", "$799", "$999"),
        "month": ("January", "February", "March", "April", "May", "June", "September", "October"),
        "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    },
)


# --- 华夏网 (huaxia): a Chinese news portal, served in GBK -------------------------------------------------

HUAXIA = SiteVocab(
    sections=(
        SectionVocab(
            "国内",
            "guonei",
            ("城际铁路", "跨江大桥", "地铁三号线", "沿江高速公路扩建工程", "新机场航站楼", "引水工程"),
            (
                "{city}{subject}正式开工建设",
                "{city}{subject}建设取得阶段性进展",
                "{subject}年内建成，{city}交通格局迎来新变化",
                "总投资{money}亿元的{city}{subject}获批复",
                "{city}加快推进{subject}建设",
            ),
            (
                "记者{weekday}从{city}市{dept}获悉，{city}{subject}已于日前正式开工，预计总投资{money}亿元。",
                "经过{n2}个月的紧张施工，{city}{subject}主体工程已完成{pct}%，[整体进度好于预期|各项节点目标顺利实现]。",
                "记者从{city}市{dept}了解到，{city}{subject}[目前进展顺利|已进入收尾阶段]，预计年内建成投用。",
                "{city}{subject}近日获得国家有关部门批复，项目总投资{money}亿元，前期工作全面启动。",
                "今年以来，{city}[倒排工期、挂图作战|加大资金和要素保障力度]，全力加快推进{subject}建设。",
            ),
            (
                "据介绍，该项目全长约{km}公里，设计时速{speed}公里，建成后{city}至省城的通行时间将缩短至{minutes}"
                "分钟左右。",
                "项目建设期间，施工单位将采取分段围挡、错峰作业等措施，尽量减少对周边交通的影响。",
                "沿线{n2}个乡镇的征地拆迁工作已基本完成，群众补偿款全部足额发放到位。",
                "项目建成后，将进一步完善区域综合交通网络，带动沿线产业发展。",
                "{city}市{dept}{role}{official}表示，将严把工程质量和安全生产关，确保项目按期高质量完工。",
            ),
            names={"dept": ("交通运输局", "发展和改革委员会", "住房和城乡建设局")},
        ),
        SectionVocab(
            "财经",
            "caijing",
            (
                "江州港务集团",
                "青川钢铁公司",
                "临海电子产业园",
                "云阳茶叶合作社",
                "东平纺织集团",
                "南陵新能源公司",
            ),
            (
                "{subject}前三季度营收同比增长{pct}%",
                "{subject}新项目落户{city}",
                "{subject}加快转型升级步伐",
                "{city}出台新政支持{subject}发展",
                "{subject}签约{money}亿元合作项目",
            ),
            (
                "记者从{subject}获悉，今年前三季度，该公司实现营业收入{money}亿元，同比增长{pct}%。",
                "{weekday}，{subject}新项目签约仪式在{city}举行，项目计划总投资{money}亿元。",
                "面对[市场需求不足|原材料价格波动]等多重压力，{subject}[加大研发投入|调整产品结构]，加快转型升级步伐，经营业绩稳中有升。",
                "{city}近日出台[若干措施|专项政策]，从资金、用地、人才等方面支持{subject}做大做强。",
                "{weekday}，{subject}与多家企业在{city}集中签约，签约总金额达{money}亿元。",
            ),
            (
                "数据显示，今年以来，{city}规模以上工业增加值同比增长{pct2}%，高于全省平均水平。",
                "公司负责人介绍，新生产线投产后，年产值预计可达{money2}亿元，新增就业岗位{n}个。",
                "业内人士分析认为，随着[消费市场回暖|出口订单增加]，相关行业有望继续保持较快增长。",
                "当地还设立了专项资金，对企业技术改造和新产品研发给予补贴。",
                "下一步，企业将继续开拓海外市场，力争明年出口额突破{money2}亿元。",
            ),
            names={"dept": ("商务局", "发展和改革委员会", "统计局", "工业和信息化局")},
        ),
        SectionVocab(
            "科技",
            "keji",
            (
                "新能源汽车电池",
                "人工智能大模型",
                "量子通信网络",
                "智能农机",
                "芯片封装生产线",
                "工业互联网平台",
            ),
            (
                "{city}{subject}项目实现关键技术突破",
                "{subject}在{city}投入应用",
                "{city}发布{subject}发展行动计划",
                "{subject}产业集群在{city}加速形成",
                "{city}科研团队攻克{subject}核心难题",
            ),
            (
                "记者{weekday}从{city}市{dept}获悉，当地科研团队在{subject}领域取得重要进展，多项指标达到国内领先水平。",
                "{city}首个{subject}项目近日正式投入使用，标志着当地在相关领域迈出了关键一步。",
                "为加快发展新兴产业，{city}近日出台行动计划，提出到{year2}年{subject}产业规模突破{money}亿元。",
                "随着一批重点项目相继落地，{subject}产业集群在{city}加速形成，[今年以来|前三季度]相关产值同比增长{pct}%。",
                "{city}一家科研团队经过{n2}年攻关，近日攻克了{subject}领域的一项核心难题。",
            ),
            (
                "项目负责人介绍，团队历时{n2}年攻关，先后解决了[材料稳定性|系统兼容性]等一系列技术难题。",
                "目前，相关成果已申请发明专利{n}项，部分技术已在企业中实现转化应用。",
                "专家认为，该技术的推广应用，将有效降低生产成本，提高产品竞争力。",
                "{city}已集聚相关企业{n}余家，初步形成了从研发到制造的完整产业链。",
                "当地还将建设公共技术服务平台，为中小企业提供检测认证、人才培训等服务。",
            ),
            names={"dept": ("科学技术局", "工业和信息化局", "发展和改革委员会")},
        ),
        SectionVocab(
            "社会",
            "shehui",
            (
                "社区养老服务中心",
                "夜间公交线路",
                "中小学课后服务",
                "垃圾分类",
                "老旧小区加装电梯",
                "医保异地结算",
            ),
            (
                "{city}{subject}惠及更多市民",
                "{city}推进{subject}工作见实效",
                "{city}{subject}有了新变化",
                "{city}新增{n2}个{subject}试点",
                "让{subject}更贴心，{city}出实招",
            ),
            (
                "记者{weekday}从{city}市有关部门了解到，今年以来，{city}大力推进{subject}工作，已惠及群众{n}余人次。",
                "{city}今年将{subject}列入民生实事项目，目前各项工作进展顺利，[初步成效已经显现|群众满意度明显提升]。",
                "近日，{city}{subject}工作迎来新变化，不少市民感到[生活更加便利|办事更加省心]。",
                "记者从{city}市{dept}获悉，{city}近日新增{n2}个{subject}试点，试点总数达到{n}个。",
                "如何让{subject}更贴心？{city}[从群众最关心的问题入手|在细节上下功夫]，推出了一系列新举措。",
            ),
            (
                "{resident}告诉记者：“{quote}”",
                "据统计，全市已建成相关服务站点{n2}个，覆盖{pct}%的城市社区。",
                "为方便群众，相关部门还开通了服务热线和网上办理渠道，实现“一次都不跑”。",
                "社区工作人员表示，将继续倾听居民意见，不断改进服务方式。",
                "也有市民建议，应进一步加大宣传力度，让更多人了解相关政策。",
            ),
            names={
                "dept": ("民政局", "卫生健康委员会", "医疗保障局", "住房和城乡建设局", "交通运输局", "教育局")
            },
        ),
        SectionVocab(
            "文化",
            "wenhua",
            ("博物馆新馆", "非物质文化遗产展", "古镇修缮工程", "国际电影节", "民乐演出季", "图书馆夜读活动"),
            (
                "{city}{subject}吸引众多市民",
                "{city}{subject}即将启幕",
                "{city}{subject}让传统文化“活”起来",
                "{city}{subject}接待游客突破{n}万人次",
                "{city}{subject}亮点纷呈",
            ),
            (
                "{weekday}，{city}{subject}正式[开幕|启幕]，吸引了大批市民和游客前来参观。",
                "据主办方介绍，{city}本届{subject}将于{month}月启幕，共安排各类活动{n2}场。",
                "在{city}，{subject}[正成为|已成为]市民感受传统文化的新窗口，不少年轻人专程前来“打卡”。",
                "{city}{subject}自开放以来，累计接待游客已突破{n}万人次。",
                "{city}{subject}[日前|近日]拉开帷幕，[非遗展示、文艺演出|文创市集、主题讲座]等活动亮点纷呈。",
            ),
            (
                "活动现场，[剪纸、刺绣、木雕|皮影戏、地方戏曲]等传统技艺轮番亮相，引得观众驻足观看。",
                "主办方负责人表示，希望通过此次活动，让更多年轻人了解和喜爱传统文化。",
                "为方便市民参观，场馆延长了开放时间，并推出了线上预约服务。",
                "不少家长带着孩子前来参观，{resident}说：“{quote}”",
                "据了解，当地文旅部门还将推出多条文化旅游精品线路。",
            ),
            names={"dept": ("文化和旅游局", "文化广电和旅游局", "教育局")},
        ),
    ),
    shared=(
        "{city}市{dept}有关负责人表示，下一步将[加强统筹协调|压实各方责任|强化要素保障]，确保各项工作[按期完成|落到实处]。",
        "据了解，这是{city}今年以来[推进|启动|落地]的第{n2}个[重点项目|民生项目|重大项目]。",
        "{city}市{dept}{role}{official}在接受记者采访时说，相关部门已组织专家进行了多轮论证，"
        "[方案总体可行|条件已经成熟]。",
        "[不少市民|多数受访群众]对此表示欢迎，也有人担心[施工期间会影响出行|后续管理跟不上|相关费用会有所增加]。",
        "对此，{city}市{dept}表示，将认真研究群众意见，[及时改进工作|完善相关措施]。",
        "数据显示，今年前三季度，{city}全市固定资产投资同比增长{pct2}%，增速比上半年加快{dec}个百分点。",
        "{city}还将通过政府网站、热线电话等渠道广泛征求意见，具体方案预计{month}月公布。",
        "业内专家指出，[此举|这一做法]对于[改善民生|推动高质量发展]具有积极意义。",
        "截至目前，相关工作已累计投入资金{money2}亿元。",
        "下一步，{city}将进一步[完善配套政策|优化营商环境|健全长效机制]，[加大支持力度|强化督促检查]，推动各项措施落地见效。",
        "记者在{city}现场看到，[工作人员正在有序忙碌|工人们正在紧张施工|前来咨询的群众络绎不绝]，[各项准备工作已基本就绪|现场秩序井然]。",
        "“{quote}”{resident}说。",
        "今年以来，{city}已召开{n2}次专题会议，研究解决工作推进中遇到的[资金|用地|审批]等问题。",
        "{city}市{dept}{role}{official}坦言，工作中还存在[基层力量不足|资金缺口较大|群众知晓率不高]等问题，需要在实践中逐步解决。",
        "与{year2}年的目标相比，{city}目前已完成约{pct}%的任务量。",
        "据测算，相关措施全面实施后，每年可为群众和企业节约成本约{money2}亿元。",
        "在{city}某街道，记者随机采访了{n2}位居民，大家普遍认为[变化明显|服务更加便捷]。",
        "针对群众反映集中的问题，{city}市{dept}已建立[问题清单|工作台账]，实行[销号管理|限时办结]。",
        "{city}还将引入第三方评估，对工作成效进行[打分|综合评价]，评估结果向社会公布。",
        "[专家|学者]建议，{city}应在总结经验的基础上，进一步扩大试点范围。",
        "据{city}市{dept}统计，截至上月底，已累计受理群众诉求{n}件，办结率超过九成。",
        "“{quote}”在{city}生活了几十年的{resident}感慨地说。",
        "记者注意到，[周边|沿线]的配套设施也在同步建设之中，预计{month}月前后陆续投入使用。",
        "按照计划，{city}将在{year2}年前全面完成相关任务。",
        "{dept}提醒，市民如有疑问，可拨打12345政务服务热线或登录{city}市政府网站咨询。",
        "据悉，{city}将[每季度|每月]通报一次工作进展，[接受社会监督|并向社会公开相关数据]。",
    ),
    quotes=(
        "以前办事要跑好几趟，现在方便多了。",
        "这是实实在在的好事，我们老百姓都看在眼里。",
        "希望这些措施能一直坚持下去，真正落到实处。",
        "变化太大了，孩子们回来都快认不出来了。",
        "刚开始还有些担心，现在看来完全是多虑了。",
    ),
    authors=("王磊", "李娜", "张伟", "刘洋", "陈静", "杨帆", "赵敏", "黄涛", "周婷", "吴强"),
    names={
        "city": ("江州", "青川", "临海", "云阳", "东平", "南陵", "西河", "安远", "白沙", "清源"),
        "official": ("陈建国", "林晓峰", "郑红梅", "许志强", "何丽华", "宋文斌"),
        "role": ("局长", "副局长", "主任", "副主任", "处长"),
        "resident": (
            "市民张先生",
            "退休教师刘女士",
            "出租车司机老陈",
            "附近商户周女士",
            "大学生小吴",
            "社区居民李阿姨",
        ),
        "weekday": ("昨日", "近日", "日前", "本周一", "本周三", "上周五"),
    },
)
