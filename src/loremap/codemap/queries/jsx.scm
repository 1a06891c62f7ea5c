; JSX component uses (javascript and tsx): `<Widget />` references Widget.

(jsx_opening_element
  name: [
    (identifier) @name.reference.class
    (member_expression property: (property_identifier) @name.reference.class)
  ]
  (#match? @name.reference.class "^[A-Z]"))

(jsx_self_closing_element
  name: [
    (identifier) @name.reference.class
    (member_expression property: (property_identifier) @name.reference.class)
  ]
  (#match? @name.reference.class "^[A-Z]"))
