from silas_exp.app import main

if __name__ == "__main__":
    main()
