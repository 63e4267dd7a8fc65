// SPDX-License-Identifier: GPL-2.0
/*
 * gnss_gpio_sim - a simulated GPIO bank for GNSSHat's emulated hardware-in-loop rig.
 *
 * Debian's kernel is built without gpio-sim, so this small module stands in for a hat's
 * header pins behind the real GPIO character device (/dev/gpiochipN, uAPI v1 and v2).
 * It registers one gpio_chip with named lines and a simple edge interrupt chip, and gives
 * the test harness the outside view of every line through sysfs, laid out like gpio-sim:
 *
 *   /sys/devices/platform/gnss-gpio-sim/sim_gpioN/value  physical level (read-only)
 *   /sys/devices/platform/gnss-gpio-sim/sim_gpioN/pull   "pull-up" / "pull-down" (read-write)
 *
 * The level of a line is what the driver drives while it holds the line as an output, and
 * its pull otherwise: like a Raspberry Pi, whose pin controller turns a released line back
 * into an input, a released output falls back to its pull. Writing `pull` of an input line
 * is how the harness drives it from outside (a PPS pulse is pull-up, then pull-down); the
 * change raises an edge interrupt from hard-IRQ context (irq_work), so the character
 * device timestamps edges exactly as it does for a real pin controller. `value` supports
 * poll(2) (POLLPRI), so a simulator can wait for the driver to switch a line.
 *
 * Module parameters: names= (comma-separated line names; their number is the line count,
 * an empty name or "-" leaves a line unnamed), pulls= (0/1 per line), label= (chip label).
 *
 * The chip can vanish and come back through the driver core, as a GPIO controller whose driver
 * unbinds (or a USB GPIO adapter pulled out):
 *   echo gnss-gpio-sim > /sys/bus/platform/drivers/gnss-gpio-sim/unbind   chip, lines, sim_gpioN gone
 *   echo gnss-gpio-sim > /sys/bus/platform/drivers/gnss-gpio-sim/bind     back, every line at its pull
 * The line names are the "gpio-line-names" property of the platform device's software node
 * rather than the chip's `names`: Debian's 6.1 kernel never frees a chip removed while lines were
 * requested from it (the free of those lines finds no chip and drops no reference), and gpiolib's
 * name-collision check for `names` walks that dead chip's lines through its NULL gpio_chip, an oops
 * at the next bind. The property path sets the names without that check. The node is one of our
 * own (fwnode_create_software_node), not a managed one: the chip's device shares its parent's node,
 * and removing that device drops a managed node's last reference.
 */
#include <linux/bitmap.h>
#include <linux/device.h>
#include <linux/gpio/driver.h>
#include <linux/irq.h>
#include <linux/irq_work.h>
#include <linux/kernfs.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/property.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#define SIM_NAME "gnss-gpio-sim"
#define SIM_MAX_LINES 64

static char *names[SIM_MAX_LINES] = {
	"GNSS_PWR_EN", "GNSS_RESET_N", "GNSS_STANDBY", "GNSS_FORCE_ON", "GNSS_PPS", "GNSS_EXTINT",
};
static int num_names = 6;
module_param_array(names, charp, &num_names, 0444);
MODULE_PARM_DESC(names, "line names, comma-separated; their number is the line count");

/* Idle levels of the hat: power enable pulled down, reset (active low) and standby pulled up. */
static int pulls[SIM_MAX_LINES] = { 0, 1, 1, 0, 0, 0 };
static int num_pulls = 6;
module_param_array(pulls, int, &num_pulls, 0444);
MODULE_PARM_DESC(pulls, "pull of each line (0 = down, 1 = up); missing entries are 0");

static char *label = "gnss-hat-sim";
module_param(label, charp, 0444);
MODULE_PARM_DESC(label, "label of the GPIO chip");

struct sim_chip;

/* The sysfs view of one line: the directory sim_gpioN with `value` and `pull`. */
struct sim_line {
	struct sim_chip *chip;
	unsigned int offset;
	char dir_name[16];
	struct device_attribute value_attr;
	struct device_attribute pull_attr;
	struct attribute *attrs[3];
	struct attribute_group group;
	struct kernfs_node *value_node; /* for poll(2) notification from atomic context */
};

struct sim_chip {
	struct gpio_chip gc;
	struct device *dev;
	spinlock_t lock; /* guards the bitmaps below */
	DECLARE_BITMAP(output, SIM_MAX_LINES);  /* held as an output by a driver */
	DECLARE_BITMAP(driven, SIM_MAX_LINES);  /* level driven while an output */
	DECLARE_BITMAP(pull, SIM_MAX_LINES);    /* level when not driven */
	DECLARE_BITMAP(irq_on, SIM_MAX_LINES);  /* interrupt unmasked */
	DECLARE_BITMAP(rising, SIM_MAX_LINES);
	DECLARE_BITMAP(falling, SIM_MAX_LINES);
	DECLARE_BITMAP(pending, SIM_MAX_LINES); /* edges waiting for the irq_work */
	struct irq_work irq_work;
	struct sim_line *lines;
	const struct attribute_group **groups;
};

static bool sim_level(struct sim_chip *chip, unsigned int offset)
{
	if (test_bit(offset, chip->output))
		return test_bit(offset, chip->driven);
	return test_bit(offset, chip->pull);
}

/* Called with chip->lock held after a change that may have moved the level of a line. */
static void sim_level_changed(struct sim_chip *chip, unsigned int offset, bool before)
{
	bool now = sim_level(chip, offset);

	if (now == before)
		return;
	if (chip->lines && chip->lines[offset].value_node)
		kernfs_notify(chip->lines[offset].value_node);
	if (test_bit(offset, chip->output) || !test_bit(offset, chip->irq_on))
		return;
	if ((now && test_bit(offset, chip->rising)) || (!now && test_bit(offset, chip->falling))) {
		set_bit(offset, chip->pending);
		irq_work_queue(&chip->irq_work);
	}
}

/* Runs in hard-IRQ context, so gpiolib's edge handler takes its timestamp as for a real pin. */
static void sim_irq_work(struct irq_work *work)
{
	struct sim_chip *chip = container_of(work, struct sim_chip, irq_work);
	unsigned int offset;

	for (offset = 0; offset < chip->gc.ngpio; offset++)
		if (test_and_clear_bit(offset, chip->pending))
			generic_handle_domain_irq(chip->gc.irq.domain, offset);
}

static int sim_get(struct gpio_chip *gc, unsigned int offset)
{
	struct sim_chip *chip = gpiochip_get_data(gc);
	unsigned long flags;
	int level;

	spin_lock_irqsave(&chip->lock, flags);
	level = sim_level(chip, offset);
	spin_unlock_irqrestore(&chip->lock, flags);
	return level;
}

static void sim_set(struct gpio_chip *gc, unsigned int offset, int value)
{
	struct sim_chip *chip = gpiochip_get_data(gc);
	unsigned long flags;
	bool before;

	spin_lock_irqsave(&chip->lock, flags);
	before = sim_level(chip, offset);
	assign_bit(offset, chip->driven, value);
	sim_level_changed(chip, offset, before);
	spin_unlock_irqrestore(&chip->lock, flags);
}

static int sim_direction_output(struct gpio_chip *gc, unsigned int offset, int value)
{
	struct sim_chip *chip = gpiochip_get_data(gc);
	unsigned long flags;
	bool before;

	spin_lock_irqsave(&chip->lock, flags);
	before = sim_level(chip, offset);
	assign_bit(offset, chip->driven, value);
	set_bit(offset, chip->output);
	sim_level_changed(chip, offset, before);
	spin_unlock_irqrestore(&chip->lock, flags);
	return 0;
}

static int sim_direction_input(struct gpio_chip *gc, unsigned int offset)
{
	struct sim_chip *chip = gpiochip_get_data(gc);
	unsigned long flags;
	bool before;

	spin_lock_irqsave(&chip->lock, flags);
	before = sim_level(chip, offset);
	clear_bit(offset, chip->output);
	sim_level_changed(chip, offset, before);
	spin_unlock_irqrestore(&chip->lock, flags);
	return 0;
}

static int sim_get_direction(struct gpio_chip *gc, unsigned int offset)
{
	struct sim_chip *chip = gpiochip_get_data(gc);

	return test_bit(offset, chip->output) ? GPIO_LINE_DIRECTION_OUT : GPIO_LINE_DIRECTION_IN;
}

/* A released line becomes an input again and falls back to its pull, as on a Pi. */
static void sim_free(struct gpio_chip *gc, unsigned int offset)
{
	sim_direction_input(gc, offset);
}

static void sim_irq_mask(struct irq_data *data)
{
	struct gpio_chip *gc = irq_data_get_irq_chip_data(data);
	struct sim_chip *chip = gpiochip_get_data(gc);
	irq_hw_number_t hwirq = irqd_to_hwirq(data);

	clear_bit(hwirq, chip->irq_on);
	gpiochip_disable_irq(gc, hwirq);
}

static void sim_irq_unmask(struct irq_data *data)
{
	struct gpio_chip *gc = irq_data_get_irq_chip_data(data);
	struct sim_chip *chip = gpiochip_get_data(gc);
	irq_hw_number_t hwirq = irqd_to_hwirq(data);

	gpiochip_enable_irq(gc, hwirq);
	set_bit(hwirq, chip->irq_on);
}

static int sim_irq_set_type(struct irq_data *data, unsigned int type)
{
	struct gpio_chip *gc = irq_data_get_irq_chip_data(data);
	struct sim_chip *chip = gpiochip_get_data(gc);
	irq_hw_number_t hwirq = irqd_to_hwirq(data);

	switch (type & IRQ_TYPE_SENSE_MASK) {
	case IRQ_TYPE_NONE:
	case IRQ_TYPE_EDGE_RISING:
	case IRQ_TYPE_EDGE_FALLING:
	case IRQ_TYPE_EDGE_BOTH:
		break;
	default:
		return -EINVAL; /* edges only, like the character device asks for */
	}
	assign_bit(hwirq, chip->rising, type & IRQ_TYPE_EDGE_RISING);
	assign_bit(hwirq, chip->falling, type & IRQ_TYPE_EDGE_FALLING);
	return 0;
}

static const struct irq_chip sim_irq_chip = {
	.name = SIM_NAME,
	.irq_mask = sim_irq_mask,
	.irq_unmask = sim_irq_unmask,
	.irq_set_type = sim_irq_set_type,
	.flags = IRQCHIP_IMMUTABLE | IRQCHIP_SKIP_SET_WAKE,
	GPIOCHIP_IRQ_RESOURCE_HELPERS,
};

static ssize_t value_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct sim_line *line = container_of(attr, struct sim_line, value_attr);

	return sysfs_emit(buf, "%d\n", sim_get(&line->chip->gc, line->offset));
}

static ssize_t pull_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct sim_line *line = container_of(attr, struct sim_line, pull_attr);
	struct sim_chip *chip = line->chip;

	return sysfs_emit(buf, "%s\n", test_bit(line->offset, chip->pull) ? "pull-up" : "pull-down");
}

static ssize_t pull_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	struct sim_line *line = container_of(attr, struct sim_line, pull_attr);
	struct sim_chip *chip = line->chip;
	unsigned long flags;
	bool up, before;

	if (sysfs_streq(buf, "pull-up") || sysfs_streq(buf, "1"))
		up = true;
	else if (sysfs_streq(buf, "pull-down") || sysfs_streq(buf, "0"))
		up = false;
	else
		return -EINVAL;

	spin_lock_irqsave(&chip->lock, flags);
	before = sim_level(chip, line->offset);
	assign_bit(line->offset, chip->pull, up);
	sim_level_changed(chip, line->offset, before);
	spin_unlock_irqrestore(&chip->lock, flags);
	return count;
}

static int sim_setup_sysfs(struct sim_chip *chip)
{
	unsigned int i, n = chip->gc.ngpio;

	chip->lines = devm_kcalloc(chip->dev, n, sizeof(*chip->lines), GFP_KERNEL);
	chip->groups = devm_kcalloc(chip->dev, n + 1, sizeof(*chip->groups), GFP_KERNEL);
	if (!chip->lines || !chip->groups)
		return -ENOMEM;

	for (i = 0; i < n; i++) {
		struct sim_line *line = &chip->lines[i];

		line->chip = chip;
		line->offset = i;
		snprintf(line->dir_name, sizeof(line->dir_name), "sim_gpio%u", i);

		sysfs_attr_init(&line->value_attr.attr);
		line->value_attr.attr.name = "value";
		line->value_attr.attr.mode = 0444;
		line->value_attr.show = value_show;

		sysfs_attr_init(&line->pull_attr.attr);
		line->pull_attr.attr.name = "pull";
		line->pull_attr.attr.mode = 0644;
		line->pull_attr.show = pull_show;
		line->pull_attr.store = pull_store;

		line->attrs[0] = &line->value_attr.attr;
		line->attrs[1] = &line->pull_attr.attr;
		line->attrs[2] = NULL;
		line->group.name = line->dir_name;
		line->group.attrs = line->attrs;
		chip->groups[i] = &line->group;
	}
	return sysfs_create_groups(&chip->dev->kobj, chip->groups);
}

/* Looks up every `value` file once, so level changes can notify pollers from any context. */
static void sim_find_value_nodes(struct sim_chip *chip)
{
	unsigned int i;

	for (i = 0; i < chip->gc.ngpio; i++) {
		struct kernfs_node *dir = kernfs_find_and_get(chip->dev->kobj.sd, chip->lines[i].dir_name);
		struct kernfs_node *value = dir ? kernfs_find_and_get(dir, "value") : NULL;
		unsigned long flags;

		kernfs_put(dir);
		spin_lock_irqsave(&chip->lock, flags);
		chip->lines[i].value_node = value;
		spin_unlock_irqrestore(&chip->lock, flags);
	}
}

static void sim_teardown_sysfs(struct sim_chip *chip)
{
	unsigned int i;
	unsigned long flags;
	struct kernfs_node *node;

	for (i = 0; i < chip->gc.ngpio; i++) {
		spin_lock_irqsave(&chip->lock, flags);
		node = chip->lines[i].value_node;
		chip->lines[i].value_node = NULL;
		spin_unlock_irqrestore(&chip->lock, flags);
		kernfs_put(node);
	}
	sysfs_remove_groups(&chip->dev->kobj, chip->groups);
}

static int sim_probe(struct platform_device *pdev)
{
	struct sim_chip *chip;
	struct gpio_irq_chip *girq;
	unsigned int i, n;
	int ret;

	n = num_names;
	if (n == 0 || n > SIM_MAX_LINES)
		return -EINVAL;

	chip = devm_kzalloc(&pdev->dev, sizeof(*chip), GFP_KERNEL);
	if (!chip)
		return -ENOMEM;
	chip->dev = &pdev->dev;
	spin_lock_init(&chip->lock);
	chip->irq_work = IRQ_WORK_INIT_HARD(sim_irq_work);
	for (i = 0; i < n; i++)
		assign_bit(i, chip->pull, i < num_pulls && pulls[i]);

	chip->gc.label = label;
	chip->gc.parent = &pdev->dev;
	chip->gc.owner = THIS_MODULE;
	chip->gc.base = -1;
	chip->gc.ngpio = n; /* names: the device's "gpio-line-names" (see the top of the file) */
	chip->gc.can_sleep = false;
	chip->gc.get = sim_get;
	chip->gc.set = sim_set;
	chip->gc.direction_input = sim_direction_input;
	chip->gc.direction_output = sim_direction_output;
	chip->gc.get_direction = sim_get_direction;
	chip->gc.free = sim_free;

	girq = &chip->gc.irq;
	gpio_irq_chip_set_chip(girq, &sim_irq_chip);
	girq->handler = handle_simple_irq;
	girq->default_type = IRQ_TYPE_NONE;
	girq->num_parents = 0;
	girq->parents = NULL;
	girq->parent_handler = NULL;

	ret = sim_setup_sysfs(chip);
	if (ret)
		return ret;
	sim_find_value_nodes(chip);

	ret = devm_gpiochip_add_data(&pdev->dev, &chip->gc, chip);
	if (ret) {
		sim_teardown_sysfs(chip);
		return ret;
	}
	platform_set_drvdata(pdev, chip);
	dev_info(&pdev->dev, "%u simulated lines on chip \"%s\"\n", n, label);
	return 0;
}

static int sim_remove(struct platform_device *pdev)
{
	struct sim_chip *chip = platform_get_drvdata(pdev);

	sim_teardown_sysfs(chip);
	irq_work_sync(&chip->irq_work);
	return 0; /* the gpio_chip goes with devm after this */
}

static struct platform_driver sim_driver = {
	.probe = sim_probe,
	.remove = sim_remove,
	.driver = { .name = SIM_NAME },
};

static struct platform_device *sim_pdev;
static struct fwnode_handle *sim_fwnode;

/* "gpio-line-names": names=, with "" for an unnamed line (the node keeps copies). */
static const char *sim_line_names[SIM_MAX_LINES];
static struct property_entry sim_properties[2];

static int __init sim_init(void)
{
	struct platform_device_info info = {
		.name = SIM_NAME,
		.id = PLATFORM_DEVID_NONE,
	};
	unsigned int i;
	int ret;

	if (num_names == 0 || num_names > SIM_MAX_LINES)
		return -EINVAL;
	for (i = 0; i < num_names; i++)
		sim_line_names[i] = (names[i] && strcmp(names[i], "-")) ? names[i] : "";
	sim_properties[0] = PROPERTY_ENTRY_STRING_ARRAY_LEN("gpio-line-names", sim_line_names, num_names);
	sim_fwnode = fwnode_create_software_node(sim_properties, NULL);
	if (IS_ERR(sim_fwnode))
		return PTR_ERR(sim_fwnode);
	info.fwnode = sim_fwnode;
	ret = platform_driver_register(&sim_driver);
	if (ret)
		goto out_node;
	sim_pdev = platform_device_register_full(&info);
	if (IS_ERR(sim_pdev)) {
		ret = PTR_ERR(sim_pdev);
		goto out_driver;
	}
	if (!platform_get_drvdata(sim_pdev)) {
		/* the probe failed (bad parameters): do not leave a half-made device behind */
		ret = -EINVAL;
		goto out_device;
	}
	return 0;

out_device:
	platform_device_unregister(sim_pdev);
out_driver:
	platform_driver_unregister(&sim_driver);
out_node:
	fwnode_remove_software_node(sim_fwnode);
	return ret;
}

static void __exit sim_exit(void)
{
	platform_device_unregister(sim_pdev);
	platform_driver_unregister(&sim_driver);
	fwnode_remove_software_node(sim_fwnode);
}

module_init(sim_init);
module_exit(sim_exit);

MODULE_DESCRIPTION("Simulated GPIO lines of a GNSS hat for GNSSHat's hardware-in-loop rig");
MODULE_LICENSE("GPL");
