from pipeline.campaign.driver import main

main()
