from tgms.pipeline.campaign.driver import main

main()
