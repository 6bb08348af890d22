/* choices.h: "a|b|c" lists of names, as option tables spell an enum's values. */
#ifndef CONTINUO_CHOICES_H
#define CONTINUO_CHOICES_H

/* The index of VALUE among CHOICES ("a|b|c": "b" is 1), or -1 when it is
 * none of them (names compare whole and case-sensitively). */
int choice_index(const char *choices, const char *value);

#endif
